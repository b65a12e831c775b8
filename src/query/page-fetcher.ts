/**
 * Fetches one planned page completely, whatever the server does with `limit`: a short page (the server
 * clamped `limit`) is followed by a request for the rest, so no row is lost; answers that would lose or
 * duplicate rows (wrong `start`, a changing `total`, no progress) are protocol errors, never guessed at.
 */

import { atPage, DqsError, ProtocolError, ResponseTooLargeError } from '../core/errors.js';
import type { BodyPool, PageBody, PageDecoder, PagePart } from '../decode/index.js';
import type { EndpointClient } from '../transport/endpoints.js';
import { statusFromHeaders } from '../transport/endpoints.js';
import { discardBody, type HttpResponse, readBounded, translateError } from '../transport/http.js';
import { type RetryEvent, withRetry } from '../transport/retry.js';
import type { PageRange } from './page-plan.js';

export type { PagePart } from '../decode/index.js';

export interface PageFetchContext {
  readonly client: EndpointClient;
  readonly datasetId: string;
  readonly queryId: string;
  /** The result's total, as the query reported it; every page must agree. */
  readonly total: number;
  readonly mediaType: string;
  /** The stream's decoder for the chosen format (fast path, else the reference: see `PageDecoder`). */
  readonly decoder: PageDecoder;
  readonly maxResponseBytes: number;
  readonly timeoutMs?: number | undefined;
  /** Told about each retried page request (the stream steps its concurrency down on 429s). */
  readonly onRetry?: ((event: RetryEvent) => void) | undefined;
  /** Opens a page's response another way (a page already read with the query); default: a GET. */
  readonly openPage?: ((range: PageRange, signal: AbortSignal) => Promise<HttpResponse>) | undefined;
}

/** Rows in a part. */
export function partLength(part: PagePart): number {
  return Array.isArray(part) ? part.length : part.length;
}

/** The rows of one planned page, in order, and the body bytes they took. */
export interface PageData {
  readonly range: PageRange;
  /** The rows, in order: one part per request (more when the server answered short pages). */
  readonly parts: readonly PagePart[];
  /** Rows in all parts. */
  readonly rowCount: number;
  readonly bytes: number;
  /** Requests it took (more than 1 when the server answered short pages). */
  readonly requests: number;
}

interface Piece {
  part: PagePart;
  rows: number;
  bytes: number;
  total: number;
  start: number;
}

async function fetchPiece(ctx: PageFetchContext, sub: PageRange, signal: AbortSignal): Promise<Piece> {
  const response = ctx.openPage
    ? await ctx.openPage(sub, signal)
    : await ctx.client.openPage(ctx.datasetId, ctx.queryId, {
        start: sub.start,
        limit: sub.limit,
        mediaType: ctx.mediaType,
        signal,
        timeoutMs: ctx.timeoutMs,
        retry: false,
      });
  try {
    // Formats without a page envelope (CSV, XLSX): the headers give the total, position is what we asked for.
    const status = ctx.decoder.format.envelope ? undefined : statusFromHeaders(response);
    const body = pageBody(response, ctx.maxResponseBytes);
    const { part, envelope } = await ctx.decoder.decode(body, sub);
    const rows = partLength(part);
    if (envelope === undefined)
      return { part, rows, bytes: body.bytes, total: status!.total, start: sub.start };
    if (rows !== envelope.count)
      throw new ProtocolError(`page says count=${envelope.count} but holds ${rows} rows`, response.info);
    return { part, rows, bytes: body.bytes, total: envelope.total, start: envelope.start };
  } finally {
    discardBody(response);
    response.done();
  }
}

/**
 * The body of a page response, read once, whole or as it arrives (the decoder chooses), never beyond
 * `maxBytes`: a declared size over it fails before any byte is read, a body growing past it as soon as it
 * does. `bytes` is what was read.
 */
function pageBody(response: HttpResponse, maxBytes: number): PageBody & { readonly bytes: number } {
  let bytes = 0;
  return {
    get bytes() {
      return bytes;
    },
    async whole(pool) {
      const read = pool
        ? await readPooled(response, pool, maxBytes)
        : { body: await readBounded(response, maxBytes), pooled: undefined };
      bytes = read.body.length;
      return read;
    },
    async *chunks() {
      // The same limit and error as whole bodies.
      const tooLarge = () => new ResponseTooLargeError(response.info, maxBytes);
      if (Number(response.headers['content-length']) > maxBytes) throw tooLarge();
      const body = response.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      for (;;) {
        let next: IteratorResult<Buffer>;
        try {
          next = await body.next();
        } catch (err) {
          // A body cut short is a NetworkError (retried), not a DecodeError of the rows before the cut.
          throw translateError(err, response.info, response.signal);
        }
        if (next.done) return;
        bytes += next.value.length;
        if (bytes > maxBytes) throw tooLarge();
        yield next.value;
      }
    },
  };
}

/**
 * Reads a body of declared length into a buffer the decoder hands out and takes back after decoding, so
 * pages do not each leave a body-sized allocation behind (nor a `Buffer.concat` of the chunks). Bodies
 * of unknown length take `readBounded`.
 */
async function readPooled(
  response: HttpResponse,
  pool: BodyPool,
  maxBytes: number,
): Promise<{ body: Buffer; pooled: Buffer | undefined }> {
  const declared = Number(response.headers['content-length']);
  if (!Number.isInteger(declared) || declared <= 0 || declared > maxBytes) {
    return { body: await readBounded(response, maxBytes), pooled: undefined };
  }
  const pooled = pool.bodyBuffer(declared);
  let size = 0;
  try {
    for await (const chunk of response.body) {
      const bytes = chunk as Buffer;
      // HTTP/1.1 bodies end at their Content-Length; be safe with anything that does not.
      if (size + bytes.length > declared)
        throw new ProtocolError('the body is longer than its Content-Length', response.info);
      bytes.copy(pooled, size);
      size += bytes.length;
    }
  } catch (err) {
    pool.releaseBody(pooled);
    throw translateError(err, response.info, response.signal);
  }
  return { body: pooled.subarray(0, size), pooled };
}

export async function fetchPage(
  ctx: PageFetchContext,
  range: PageRange,
  signal: AbortSignal,
): Promise<PageData> {
  const end = range.start + range.limit; // exclusive
  const parts: PagePart[] = [];
  let bytes = 0;
  let requests = 0;
  let next = range.start;
  while (next < end) {
    const sub = { start: next, limit: end - next };
    let piece: Piece;
    try {
      // Retried as a whole (request, body and decode), so a body cut mid-way costs one more request,
      // never a lost or repeated row: the rows of a failed attempt are dropped with it.
      piece = await withRetry(
        () => fetchPiece(ctx, sub, signal),
        ctx.client.http.retryPolicy,
        `GET page start=${sub.start} limit=${sub.limit}`,
        signal,
        (event) => {
          ctx.client.http.reportRetry(event);
          ctx.onRetry?.(event);
        },
      );
    } catch (err) {
      throw err instanceof DqsError ? atPage(err, sub) : err;
    }
    requests++;
    bytes += piece.bytes;
    const where = { method: 'GET', url: `start=${sub.start} limit=${sub.limit}` };
    if (piece.start !== sub.start) {
      throw atPage(
        new ProtocolError(`page answered start=${piece.start} for start=${sub.start}`, where),
        sub,
      );
    }
    if (piece.total !== ctx.total) {
      throw atPage(
        new ProtocolError(
          `the result's total changed from ${ctx.total} to ${piece.total} while reading`,
          where,
        ),
        sub,
      );
    }
    if (piece.rows > sub.limit) {
      throw atPage(new ProtocolError(`page holds ${piece.rows} rows for limit=${sub.limit}`, where), sub);
    }
    if (piece.rows === 0) {
      throw atPage(
        new ProtocolError(`page is empty though rows ${sub.start}..${end - 1} remain`, where),
        sub,
      );
    }
    parts.push(piece.part);
    next += piece.rows;
  }
  return { range, parts, rowCount: next - range.start, bytes, requests };
}
