/**
 * Reading response headers, one rule for all of them. undici gives a header sent more than once as an
 * array of its values, and what that means depends on the header:
 *
 * - A list (X-Formats, comma-separated per RFC 9110 §5.3) and the query headers a result's rows rest on
 *   (X-State, X-Total, X-Truncated) are read with `joinedHeader`: repeated lines join with ',' as RFC 9110
 *   says they may, so a repeated list is one longer list, and a repeated X-Total ("25,30") reads as the
 *   malformed value it is (a ProtocolError), never one copy picked silently.
 * - A single value that only tunes a wait or a message (Retry-After, Location, Content-Type, Date,
 *   X-Api-Version) is read with `firstHeader`: its first copy.
 */

/** Response headers as undici hands them out (names in lower case). */
export type ResponseHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** A list-valued or result-defining header: repeated lines joined with ',' (see the module's rule). */
export function joinedHeader(headers: ResponseHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

/** A single-valued advisory header: its first copy (see the module's rule). */
export function firstHeader(headers: ResponseHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** X-Formats: the media types offered, in the service's order (empty entries dropped; `[]` when absent). */
export function formatsHeader(headers: ResponseHeaders): string[] {
  return (joinedHeader(headers, 'x-formats') ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f.length > 0);
}

/** X-Truncated: true only for `true` (any case, spaces around), `undefined` when the header is absent. */
export function truncatedHeader(headers: ResponseHeaders): boolean | undefined {
  const v = joinedHeader(headers, 'x-truncated');
  return v === undefined ? undefined : v.trim().toLowerCase() === 'true';
}
