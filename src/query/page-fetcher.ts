/**
 * Fetches one planned page completely, whatever the server does with `limit`: a short page (the server
 * clamped `limit`) is followed by a request for the rest, so no row is lost; answers that would lose or
 * duplicate rows (wrong `start`, a changing `total`, no progress) are protocol errors, never guessed at.
 */

import type { ColumnPlan, DecodedColumns } from '../convert/index.js';
import {
  atPage,
  DecodeError,
  DqsError,
  KNOWN_QUERY_STATES,
  ProtocolError,
  QueryFailedError,
  type RequestInfo,
  ResponseTooLargeError,
  safeRepr,
} from '../core/errors.js';
import type { WireValue } from '../core/wire.js';
import type { FastCsvDecoder } from '../decode/csv-columns.js';
import { decodeCsv, decodeXlsx, parseTablePage } from '../decode/index.js';
import type { FastTableDecoder, FastTablePage } from '../decode/table-json-fast.js';
import type { EndpointClient } from '../transport/endpoints.js';
import { statusFromHeaders } from '../transport/endpoints.js';
import { bodyText, discardBody, type HttpResponse, readBounded, translateError } from '../transport/http.js';
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

/** The page's descriptors must be the planned columns, in order. */
function checkFields(fields: readonly { id: string }[], plan: readonly ColumnPlan[], where: PageRange): void {
  if (fields.length === plan.length && plan.every((c) => fields[c.index]?.id === c.id)) return;
  throw new DecodeError(
    `The page's fields are not the planned columns: expected ${safeRepr(plan.map((c) => c.id).join(','))}, got ${safeRepr(fields.map((f) => f.id).join(','))}`,
    { page: where },
  );
}

async function fetchPiece(ctx: PageFetchContext, sub: PageRange, signal: AbortSignal): Promise<Piece> {
  const response = await ctx.client.openPage(ctx.datasetId, ctx.queryId, {
    start: sub.start,
    limit: sub.limit,
    mediaType: ctx.mediaType,
    signal,
    timeoutMs: ctx.timeoutMs,
    retry: false,
  });
  try {
    if (ctx.format === 'json') {
      const decoder = ctx.tableDecoder;
      const { body, pooled } = decoder
        ? await readPooled(response, decoder, ctx.maxResponseBytes)
        : { body: await readBounded(response, ctx.maxResponseBytes), pooled: undefined };
      let fast: FastTablePage | undefined;
      let text: string | undefined;
      try {
        fast = decoder?.decode(body, sub);
        if (fast === undefined) text = bodyText(body, response.info);
      } finally {
        // Nothing reads the body's bytes any more: the decoder copied what it keeps.
        if (pooled) decoder?.releaseBody(pooled);
      }
      // The fast decoder only accepts pages whose fields are the plan's, so the check is the same.
      if (fast === undefined) {
        const page = parseTablePage(text!, sub);
        // Values are typed by position: a page whose rows follow other columns must not be read as ours.
        if (page.rows.length > 0) checkFields(page.fields, ctx.plan, sub);
        return countChecked(page.rows, page.rows.length, page.count, body.length, page, response.info);
      }
      return countChecked(fast, fast.length, fast.count, body.length, fast, response.info);
    }
    // CSV and XLSX carry no page envelope: position is what we asked for, and the total is the HEAD's
    // unless the response repeats the query headers (checked then). The spec shows none on the data GET.
    const status = dataGetStatus(ctx, response);
    // The same limit and error as buffered bodies: a declared size over it fails before any byte is read.
    const tooLarge = () => new ResponseTooLargeError(response.info, ctx.maxResponseBytes);
    if (Number(response.headers['content-length']) > ctx.maxResponseBytes) throw tooLarge();
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
        if (next.done) return;
        bytes += next.value.length;
        if (bytes > ctx.maxResponseBytes) throw tooLarge();
        yield next.value;
      }
    })();
    let body: AsyncIterable<Buffer> = counted;
    if (ctx.format === 'csv' && ctx.csvDecoder) {
      const chunks: Buffer[] = [];
      for await (const chunk of counted) chunks.push(chunk);
      const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
      const fast = ctx.csvDecoder.decode(whole, sub);
      if (fast) return { part: fast, rows: fast.length, bytes, total: status.total, start: sub.start };
      // Declined (malformed, a value its column rejects, ...): the reference path gives the rows or the error.
      body = (async function* () {
        yield whole;
      })();
    }
    const decode = ctx.format === 'csv' ? decodeCsv : decodeXlsx;
    const rows: WireValue[][] = [];
    for await (const chunk of decode(body, ctx.plan, sub)) for (const row of chunk) rows.push(row);
    return { part: rows, rows: rows.length, bytes, total: status.total, start: sub.start };
  } finally {
    discardBody(response);
    response.done();
  }
}

/**
 * The query headers of a CSV/XLSX data GET, when it has them: a state the spec does not name is a
 * `QueryFailedError`, a malformed total a `ProtocolError` (via `statusFromHeaders`). Without them the
 * result is the one the HEAD described.
 */
function dataGetStatus(ctx: PageFetchContext, response: HttpResponse): { total: number } {
  const state = response.headers['x-state'];
  const total = response.headers['x-total'];
  if (state === undefined && total === undefined) return { total: ctx.total };
  if (typeof state === 'string' && state.trim() !== '' && !KNOWN_QUERY_STATES.has(state.trim())) {
    throw new QueryFailedError({ state: state.trim(), datasetId: ctx.datasetId, queryId: ctx.queryId });
  }
  if (state === undefined) {
    // A total without a state: read it as a complete query's.
    return statusFromHeaders({ ...response, headers: { ...response.headers, 'x-state': 'complete' } });
  }
  return statusFromHeaders(response);
}

/**
 * Reads a body of declared length into a buffer the decoder hands out and takes back after decoding, so
 * pages do not each leave a body-sized allocation behind (nor a `Buffer.concat` of the chunks). Bodies
 * of unknown length take `readBounded`.
 */
async function readPooled(
  response: HttpResponse,
  decoder: FastTableDecoder,
  maxBytes: number,
): Promise<{ body: Buffer; pooled: Buffer | undefined }> {
  const declared = Number(response.headers['content-length']);
  if (!Number.isInteger(declared) || declared <= 0 || declared > maxBytes) {
    return { body: await readBounded(response, maxBytes), pooled: undefined };
  }
  const pooled = decoder.bodyBuffer(declared);
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
    decoder.releaseBody(pooled);
    throw translateError(err, response.info, response.signal);
  }
  return { body: pooled.subarray(0, size), pooled };
}

function countChecked(
  part: PagePart,
  rows: number,
  count: number,
  bytes: number,
  page: { total: number; start: number },
  info: RequestInfo,
): Piece {
  if (rows !== count) throw new ProtocolError(`page says count=${count} but holds ${rows} rows`, info);
  return { part, rows, bytes, total: page.total, start: page.start };
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
