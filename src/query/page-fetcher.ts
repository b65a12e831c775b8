/**
 * Fetches one planned page completely, whatever the server does with `limit`: a short page (the server
 * clamped `limit`) is followed by a request for the rest, so no row is lost; answers that would lose or
 * duplicate rows (wrong `start`, a changing `total`, no progress) are protocol errors, never guessed at.
 */

import { channel } from 'node:diagnostics_channel';
import type { ColumnPlan, DecodedColumns } from '../convert/index.js';
import { atPage, DecodeError, DqsError, ProtocolError, type RequestInfo, safeRepr } from '../core/errors.js';
import type { WireValue } from '../core/wire.js';
import type { FastCsvDecoder } from '../decode/csv-columns.js';
import { decodeCsv, decodeXlsx, parseTablePage } from '../decode/index.js';
import type { FastTableDecoder, FastTablePage } from '../decode/table-json-fast.js';
import type { EndpointClient } from '../transport/endpoints.js';
import { statusFromHeaders } from '../transport/endpoints.js';
import { bodyLimit, discardBody, type HttpResponse, readBounded, translateError } from '../transport/http.js';
import { type RetryEvent, withRetry } from '../transport/retry.js';
import type { PageRange } from './page-plan.js';

export type DecodableFormat = 'json' | 'csv' | 'xlsx';

export interface PageFetchContext {
  readonly client: EndpointClient;
  readonly datasetId: string;
  readonly queryId: string;
  /** The result's total, as the query reported it; every page must agree. */
  readonly total: number;
  readonly format: DecodableFormat;
  readonly mediaType: string;
  readonly plan: readonly ColumnPlan[];
  /**
   * Table JSON straight from bytes to columns (Arrow output). Pages it declines (anything unusual) take
   * the reference path, `JSON.parse` and wire rows, which gives the same values or the right error.
   */
  readonly tableDecoder?: FastTableDecoder | undefined;
  /** CSV straight from bytes to columns, with the same contract (declined pages take `decodeCsv`). */
  readonly csvDecoder?: FastCsvDecoder | undefined;
  readonly maxResponseBytes: number;
  readonly timeoutMs?: number | undefined;
  /** Told about each retried page request (the stream steps its concurrency down on 429s). */
  readonly onRetry?: ((event: RetryEvent) => void) | undefined;
}

/** Rows of a page as the decoders give them: wire rows (JSON.parse, CSV, XLSX) or decoded columns. */
export type PagePart = WireValue[][] | DecodedColumns;

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
  /** Body bytes as decoded (inflated): what the page holds in memory, and what the byte window counts. */
  readonly bytes: number;
  /** Body bytes as they came off the socket (compressed ones, when the server compressed). */
  readonly wireBytes: number;
  /** Requests it took (more than 1 when the server answered short pages). */
  readonly requests: number;
}

interface Piece {
  part: PagePart;
  rows: number;
  bytes: number;
  wireBytes: number;
  total: number;
  start: number;
}

/** The page's descriptors must be the planned columns, in order. */
function checkFields(fields: readonly { id: string }[], plan: readonly ColumnPlan[], where: PageRange): void {
  if (fields.length === plan.length && plan.every((c) => fields[c.index]?.id === c.id)) return;
  throw new DecodeError(
    `The page's fields are not the planned columns: expected ${safeRepr(plan.map((c) => c.id).join(','))}, got ${safeRepr(fields.map((f) => f.id).join(','))}`,
    { page: where },
  );
}

/**
 * Per-page timings for benchmarks and diagnostics, published only while someone subscribes
 * (`diagnostics_channel.subscribe('dqs-client:page', ...)`): see docs/compression.md.
 */
const pageChannel = channel('dqs-client:page');

/** What `dqs-client:page` publishes for each page request read and decoded. */
export interface PageTiming {
  readonly start: number;
  readonly limit: number;
  /** Content codings undone (`[]`: the body came plain). */
  readonly codings: readonly string[];
  readonly wireBytes: number;
  /** Decoded (inflated) body bytes. */
  readonly bytes: number;
  /** From sending the request to its response headers (round trip and the server's work). */
  readonly waitMs: number;
  /** From the headers to the body's last decoded byte (transfer, with inflating overlapped). */
  readonly bodyMs: number;
  /** Decoding the page's bytes into rows or columns. */
  readonly decodeMs: number;
}

async function fetchPiece(ctx: PageFetchContext, sub: PageRange, signal: AbortSignal): Promise<Piece> {
  const sentAt = performance.now();
  const response = await ctx.client.openPage(ctx.datasetId, ctx.queryId, {
    start: sub.start,
    limit: sub.limit,
    mediaType: ctx.mediaType,
    signal,
    timeoutMs: ctx.timeoutMs,
    retry: false,
  });
  const timing = { headersAt: performance.now(), bodyAt: 0 };
  try {
    const piece = await readAndDecode(ctx, sub, response, timing);
    if (pageChannel.hasSubscribers) {
      const end = performance.now();
      pageChannel.publish({
        start: sub.start,
        limit: sub.limit,
        codings: response.codings,
        wireBytes: piece.wireBytes,
        bytes: piece.bytes,
        waitMs: timing.headersAt - sentAt,
        bodyMs: timing.bodyAt - timing.headersAt,
        decodeMs: end - timing.bodyAt,
      } satisfies PageTiming);
    }
    return piece;
  } finally {
    discardBody(response);
    response.done();
  }
}

async function readAndDecode(
  ctx: PageFetchContext,
  sub: PageRange,
  response: HttpResponse,
  timing: { bodyAt: number },
): Promise<Piece> {
  // Without compression the wire bytes are the body's; with it, the inflating stream counted them.
  const wireOf = (decoded: number) => (response.codings.length > 0 ? response.wireBytes() : decoded);
  const bodyRead = (decoded: number) => {
    timing.bodyAt = performance.now();
    response.measured(decoded);
  };
  if (ctx.format === 'json') {
    const decoder = ctx.tableDecoder;
    const { body, pooled } = decoder
      ? await readPooled(response, decoder, ctx.maxResponseBytes)
      : { body: await readBounded(response, ctx.maxResponseBytes), pooled: undefined };
    bodyRead(body.length);
    const wireBytes = wireOf(body.length);
    let fast: FastTablePage | undefined;
    let text: string | undefined;
    try {
      fast = decoder?.decode(body, sub);
      if (fast === undefined) text = body.toString('utf8');
    } finally {
      // Nothing reads the body's bytes any more: the decoder copied what it keeps.
      if (pooled) decoder?.releaseBody(pooled);
    }
    // The fast decoder only accepts pages whose fields are the plan's, so the check is the same.
    if (fast === undefined) {
      const page = parseTablePage(text!, sub);
      // Values are typed by position: a page whose rows follow other columns must not be read as ours.
      if (page.rows.length > 0) checkFields(page.fields, ctx.plan, sub);
      return countChecked(
        page.rows,
        page.rows.length,
        page.count,
        body.length,
        wireBytes,
        page,
        response.info,
      );
    }
    return countChecked(fast, fast.length, fast.count, body.length, wireBytes, fast, response.info);
  }
  // CSV and XLSX carry no page envelope: the headers give the total, position is what we asked for.
  const status = statusFromHeaders(response);
  // The same limit and error as buffered bodies, on decoded bytes: a declared size over it fails before
  // any byte is read, an inflating body the moment it passes it.
  const count = bodyLimit(response, ctx.maxResponseBytes);
  let bytes = 0;
  const counted = (async function* () {
    const body = response.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await body.next();
      } catch (err) {
        // A body cut short is a NetworkError (retried), not a DecodeError of the rows before the cut.
        throw translateError(err, response.info, response.signal);
      }
      if (next.done) {
        bodyRead(bytes);
        return;
      }
      bytes = count(next.value.length);
      yield next.value;
    }
  })();
  let body: AsyncIterable<Buffer> = counted;
  if (ctx.format === 'csv' && ctx.csvDecoder) {
    const chunks: Buffer[] = [];
    for await (const chunk of counted) chunks.push(chunk);
    const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
    const fast = ctx.csvDecoder.decode(whole, sub);
    if (fast) {
      return {
        part: fast,
        rows: fast.length,
        bytes,
        wireBytes: wireOf(bytes),
        total: status.total,
        start: sub.start,
      };
    }
    // Declined (malformed, a value its column rejects, ...): the reference path gives the rows or the error.
    body = (async function* () {
      yield whole;
    })();
  }
  const decode = ctx.format === 'csv' ? decodeCsv : decodeXlsx;
  const rows: WireValue[][] = [];
  for await (const chunk of decode(body, ctx.plan, sub)) for (const row of chunk) rows.push(row);
  return {
    part: rows,
    rows: rows.length,
    bytes,
    wireBytes: wireOf(bytes),
    total: status.total,
    start: sub.start,
  };
}

/** The last decoded body size per decoder: the first guess of the next page's, when none is declared. */
const lastBodySize = new WeakMap<FastTableDecoder, number>();
/** A first guess for an inflated body with nothing to go on: a typical page inflates ~7x. */
const INFLATE_GUESS = 8;
const MAX_GUESS = 64 * 1024 * 1024;

/**
 * Reads a body into a buffer the decoder hands out and takes back after decoding, so pages do not each
 * leave a body-sized allocation behind (nor a `Buffer.concat` of the chunks): every chunk, inflated or not,
 * is copied once, as it comes. A plain body of declared length gets a buffer of that size; an inflated (or
 * undeclared) one a guess from the last page of this decoder, grown by doubling if the guess was short.
 */
async function readPooled(
  response: HttpResponse,
  decoder: FastTableDecoder,
  maxBytes: number,
): Promise<{ body: Buffer; pooled: Buffer }> {
  const count = bodyLimit(response, maxBytes);
  const declared = Number(response.headers['content-length']);
  const known = Number.isInteger(declared) && declared > 0;
  const exact = known && response.codings.length === 0;
  const guess = Math.min(
    MAX_GUESS,
    maxBytes,
    lastBodySize.get(decoder) ?? (known ? declared * INFLATE_GUESS : 1024 * 1024),
  );
  let pooled = decoder.bodyBuffer(exact ? declared : Math.max(1, guess));
  let size = 0;
  try {
    for await (const chunk of response.body) {
      const bytes = chunk as Buffer;
      // HTTP/1.1 bodies end at their Content-Length; be safe with anything that does not.
      if (exact && size + bytes.length > declared)
        throw new ProtocolError('the body is longer than its Content-Length', response.info);
      count(bytes.length);
      if (size + bytes.length > pooled.length) {
        const bigger = decoder.bodyBuffer(Math.max(2 * pooled.length, size + bytes.length));
        pooled.copy(bigger, 0, 0, size);
        decoder.releaseBody(pooled);
        pooled = bigger;
      }
      bytes.copy(pooled, size);
      size += bytes.length;
    }
  } catch (err) {
    decoder.releaseBody(pooled);
    throw translateError(err, response.info, response.signal);
  }
  if (!exact) lastBodySize.set(decoder, size);
  return { body: pooled.subarray(0, size), pooled };
}

function countChecked(
  part: PagePart,
  rows: number,
  count: number,
  bytes: number,
  wireBytes: number,
  page: { total: number; start: number },
  info: RequestInfo,
): Piece {
  if (rows !== count) throw new ProtocolError(`page says count=${count} but holds ${rows} rows`, info);
  return { part, rows, bytes, wireBytes, total: page.total, start: page.start };
}

export async function fetchPage(
  ctx: PageFetchContext,
  range: PageRange,
  signal: AbortSignal,
): Promise<PageData> {
  const end = range.start + range.limit; // exclusive
  const parts: PagePart[] = [];
  let bytes = 0;
  let wireBytes = 0;
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
    wireBytes += piece.wireBytes;
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
  return { range, parts, rowCount: next - range.start, bytes, wireBytes, requests };
}
