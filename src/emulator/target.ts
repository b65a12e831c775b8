/**
 * Splits a request target into decoded path segments and query parameters without WHATWG URL
 * normalisation: `..` and `%2F` must stay inert data, never move a request to another route.
 */

export interface RequestTarget {
  /** The path relative to `basePath`, as sent (still percent-encoded); the full path when outside. */
  readonly path: string;
  /** Whether the path lies under `basePath`. */
  readonly insideBase: boolean;
  /** Decoded segments of `path` (relative to basePath); undefined when the path's encoding is malformed. */
  readonly segments: readonly string[] | undefined;
  /** Decoded query parameters, first value of each name; undefined when malformed. */
  readonly query: Readonly<Record<string, string>> | undefined;
}

function decode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

function parseQuery(raw: string): Record<string, string> | undefined {
  const entries: [string, string][] = [];
  const seen = new Set<string>();
  for (const pair of raw.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decode((eq < 0 ? pair : pair.slice(0, eq)).replaceAll('+', ' '));
    const value = decode(eq < 0 ? '' : pair.slice(eq + 1).replaceAll('+', ' '));
    if (name === undefined || value === undefined) return undefined;
    if (seen.has(name)) continue;
    seen.add(name);
    entries.push([name, value]);
  }
  // fromEntries defines own properties, so a parameter named `__proto__` stays plain data.
  return Object.fromEntries(entries);
}

export function parseTarget(url: string, basePath: string): RequestTarget {
  const q = url.indexOf('?');
  const rawPath = q < 0 ? url : url.slice(0, q);
  const query = parseQuery(q < 0 ? '' : url.slice(q + 1));
  if (!rawPath.startsWith('/')) return { path: rawPath, insideBase: false, segments: undefined, query };
  const insideBase = basePath === '' || rawPath === basePath || rawPath.startsWith(`${basePath}/`);
  if (!insideBase) return { path: rawPath, insideBase, segments: [], query };
  const path = rawPath.slice(basePath.length) || '/';
  const segments: string[] = [];
  for (const raw of path.slice(1).split('/')) {
    const segment = decode(raw);
    if (segment === undefined) return { path, insideBase, segments: undefined, query };
    segments.push(segment);
  }
  return { path, insideBase, segments, query };
}
