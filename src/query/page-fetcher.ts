/**
 * Fetches one planned page completely, whatever the server does with `limit`: a short page (the server
 * clamped `limit`) is followed by a request for the rest, so no row is lost; answers that would lose or
 * duplicate rows (wrong `start`, a changing `total`, no progress) are protocol errors, never guessed at.
 */

import { channel } from 'node:diagnostics_channel';
import { isDecodedColumns, type PagePart, partLength } from '../convert/page-parts.js';
import { atPage, DqsError, KNOWN_QUERY_STATES, ProtocolError, QueryFailedError } from '../core/errors.js';
import type { LoopBudget } from '../core/loop-budget.js';
import { type BodyPool, type PageBody, PageDeclined, type PageDecoder } from '../decode/index.js';
import { contentLength, countBody, declaredLength } from '../transport/body.js';
import { type PageTransport, statusFromHeaders } from '../transport/endpoints.js';
import {
  asResponseTooLarge,
  discardBody,
  type HttpResponse,
  readBounded,
  translateError,
} from '../transport/http.js';
import { withRetry } from '../transport/retry.js';
import type { HedgePolicy } from './hedge.js';
import type { PageRange } from './page-plan.js';
import { congestionOf, type PageRequests } from './page-requests.js';
import type { KeptPage } from './result-source.js';
import type { RequestHandle } from './scheduler.js';

export interface PageFetchContext {
  readonly pages: PageTransport;
  readonly datasetId: string;
  readonly queryId: string;
  /** The result's total, as the query reported it; every page must agree. */
  readonly total: number;
  readonly mediaType: string;
  /** The stream's decoder for the chosen format (fast path, else the reference: see `PageDecoder`). */
  readonly decoder: PageDecoder;
  readonly maxResponseBytes: number;
  readonly timeoutMs?: number | undefined;
  /** Sends a page request again on another connection when it is much slower than the usual (hedge.ts). */
  readonly hedge?: HedgePolicy | undefined;
  /**
   * The most rows the server has answered to a bigger `limit` (it clamps), shared by the stream's pages:
   * once one page has seen it, every request sent after asks for no more (the plan learns it only when
   * that page has arrived whole, too late for pages planned before).
   */
  served?: number;
}

/** The rows of one planned page, in order, and the body bytes they took. */
export interface PageData {
  readonly range: PageRange;
  /** The rows, in order: one part per request (more when the server answered short pages). */
  readonly parts: readonly PagePart[];
  /** Rows in all parts. */
  readonly rowCount: number;
  /** Body bytes as decoded (inflated): what the page holds in memory, and what a byte window counts. */
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
  /** From sending the request to its answer's headers (-1: not known). */
  waitMs: number;
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
  /** Decoding after the last byte (formats decoded as the body arrives do most of it before). */
  readonly decodeMs: number;
}

async function fetchPiece(
  ctx: PageFetchContext,
  sub: PageRange,
  signal: AbortSignal,
  requests: PageRequests,
  kept: KeptPage | undefined,
): Promise<Piece> {
  try {
    return await fetchPieceOnce(ctx, sub, signal, requests, kept, true);
  } catch (error) {
    if (!(error instanceof PageDeclined)) throw error;
    // Decoded as it arrived, the page was not an ordinary one: asked again and read whole, so the
    // reference decides (the same rows, or the error with its row and column). Rare: real pages are.
    return await fetchPieceOnce(ctx, sub, signal, requests, undefined, false);
  }
}

/** One request of a piece; `asItArrives`: its body may be decoded as it arrives (see `PageDeclined`). */
async function fetchPieceOnce(
  ctx: PageFetchContext,
  sub: PageRange,
  signal: AbortSignal,
  requests: PageRequests,
  kept: KeptPage | undefined,
  asItArrives: boolean,
): Promise<Piece> {
  // The query's own first page is already in hand: decoded, not asked for again (and never slow).
  if (kept) {
    const body = keptBody(kept);
    return await decodePiece(ctx, body, sub, kept.info, kept, {
      waitMs: kept.waitMs ?? -1,
      headersAt: body.readAt,
    });
  }
  return await requests.run(signal, async (handle) => {
    try {
      // Under a rate limit (set or learned) a request is what a read costs, so none is sent twice.
      if (ctx.hedge === undefined || ctx.pages.rateLimited) {
        return await fetchPieceSent(ctx, sub, signal, handle, asItArrives);
      }
      const sentAt = performance.now();
      const piece = await ctx.hedge.run(
        (s) => fetchPieceSent(ctx, sub, s, handle, asItArrives),
        signal,
        // The slower answer of a hedged request: its decoded columns go back to the decoder.
        (dropped) => {
          if (isDecodedColumns(dropped.part)) ctx.decoder.recycle(dropped.part);
        },
      );
      ctx.hedge.record(performance.now() - sentAt);
      return piece;
    } catch (error) {
      const kind = congestionOf(error);
      if (kind) handle.congested(kind);
      throw error;
    }
  });
}

async function fetchPieceSent(
  ctx: PageFetchContext,
  sub: PageRange,
  signal: AbortSignal,
  handle: RequestHandle,
  asItArrives: boolean,
): Promise<Piece> {
  const sentAt = performance.now();
  const response = await ctx.pages.openPage(ctx.datasetId, ctx.queryId, {
    start: sub.start,
    limit: sub.limit,
    mediaType: ctx.mediaType,
    signal,
    timeoutMs: ctx.timeoutMs,
    retry: false,
  });
  const headersAt = performance.now();
  handle.answered(sub.limit);
  try {
    // Formats without a page envelope (CSV, XLSX): position is what we asked for, and the total is the
    // HEAD's unless the response repeats the query headers (checked then). The spec shows none on the data GET.
    const status = ctx.decoder.format.envelope ? undefined : dataGetStatus(ctx, response);
    const body = pageBody(response, ctx.maxResponseBytes, handle, asItArrives, ctx.pages.loopBudget);
    const wire = { codings: response.codings, wireBytes: () => response.wireBytes(body.bytes) };
    return await decodePiece(
      ctx,
      body,
      sub,
      response.info,
      wire,
      { waitMs: headersAt - sentAt, headersAt },
      status,
    );
  } finally {
    discardBody(response);
    response.done();
  }
}

/** Decodes a page body and checks it against its envelope (or the query's headers). */
async function decodePiece(
  ctx: PageFetchContext,
  body: PageBody & { readonly bytes: number; readonly readAt: number },
  sub: PageRange,
  info: { readonly method: string; readonly url: string },
  wire: { readonly codings: readonly string[]; readonly wireBytes: number | (() => number) },
  /** From sending the request to its response headers, and when those came. */
  times: { readonly waitMs: number; readonly headersAt: number },
  status?: { readonly total: number },
): Promise<Piece> {
  const { part, envelope } = await ctx.decoder.decode(body, sub).catch((err: unknown) => {
    throw asResponseTooLarge(err, info, ctx.maxResponseBytes);
  });
  const rows = partLength(part);
  const wireBytes = typeof wire.wireBytes === 'number' ? wire.wireBytes : wire.wireBytes();
  if (pageChannel.hasSubscribers) {
    pageChannel.publish({
      start: sub.start,
      limit: sub.limit,
      codings: wire.codings,
      wireBytes,
      bytes: body.bytes,
      waitMs: times.waitMs,
      bodyMs: body.readAt - times.headersAt,
      decodeMs: performance.now() - body.readAt,
    } satisfies PageTiming);
  }
  const { waitMs } = times;
  if (envelope === undefined) {
    const total = status?.total ?? ctx.total;
    return { part, rows, bytes: body.bytes, wireBytes, total, start: sub.start, waitMs };
  }
  if (rows !== envelope.count)
    throw new ProtocolError(`page says count=${envelope.count} but holds ${rows} rows`, info);
  return { part, rows, bytes: body.bytes, wireBytes, total: envelope.total, start: envelope.start, waitMs };
}

/** A kept page's bytes as a page body (already read and bounded once: no copy, no limit to check). */
function keptBody(kept: KeptPage): PageBody & { readonly bytes: number; readonly readAt: number } {
  const readAt = performance.now();
  return {
    bytes: kept.bytes.length,
    readAt,
    async whole() {
      return { body: kept.bytes, pooled: undefined };
    },
    async *chunks() {
      yield kept.bytes;
    },
  };
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
 * The body of a page response, read once, whole or as it arrives (the decoder chooses), never beyond
 * `maxBytes` decoded (see `bodyLimit`: a plain body declared over it fails before any byte is read, any
 * body as soon as its inflated bytes pass it). `bytes` is what was read, decoded; `readAt` when the last
 * byte was. Reading to the end tells the transport's compression choice how long the page took.
 */
function pageBody(
  response: HttpResponse,
  maxBytes: number,
  handle: RequestHandle,
  asItArrives: boolean,
  budget: LoopBudget,
): PageBody & { readonly bytes: number; readonly readAt: number } {
  let bytes = 0;
  let readAt = 0;
  const read = (size: number) => {
    bytes = size;
    readAt = performance.now();
    response.measured(size);
    handle.bodyRead(size);
  };
  const each = async (take: (chunk: Buffer) => void) =>
    read(await readCounted(response, maxBytes, handle, budget, take));
  return {
    get bytes() {
      return bytes;
    },
    get readAt() {
      return readAt;
    },
    ...(asItArrives ? { each, declaredBytes: declaredLength(response) } : {}),
    async whole(pool) {
      const got = pool
        ? await readPooled(response, pool, maxBytes, handle, budget)
        : { body: await readBounded(response, maxBytes), pooled: undefined };
      read(got.body.length);
      return got;
    },
    async *chunks() {
      const count = countBody(response, maxBytes);
      const body = response.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      let size = 0;
      for (;;) {
        let next: IteratorResult<Buffer>;
        try {
          next = await body.next();
        } catch (err) {
          // A body cut short is a NetworkError (retried), not a DecodeError of the rows before the cut.
          throw translateError(err, response.info, response.signal);
        }
        if (next.done) {
          read(count.end());
          return;
        }
        size = count.add(next.value.length);
        bytes = size;
        handle.delivered(next.value.length);
        yield next.value;
        // At most the turn's bytes a turn, with every other body (core/loop-budget.ts): a decoder that reads as
        // the body arrives (CSV, XLSX, the reference) parsed ~2 MB per busy socket in one turn.
        const later = budget.tookBytes(next.value.length);
        if (later) await later;
      }
    },
  };
}

/**
 * Hands a body's chunks to `take` as they come, at most the turn's bytes a turn with every other body
 * (core/loop-budget.ts), counted by the transport (the limits, and the Content-Length held: longer is a
 * ProtocolError, shorter a cut); returns the body's size. A failed read is translated (a NetworkError is
 * retried); an error `take` throws goes through as it is (a `PageDeclined` is no network failure).
 */
async function readCounted(
  response: HttpResponse,
  maxBytes: number,
  handle: RequestHandle,
  budget: LoopBudget,
  take: (chunk: Buffer) => void,
): Promise<number> {
  const count = countBody(response, maxBytes);
  let thrown: { error: unknown } | undefined;
  try {
    await budget.takeInTurns(response.body, (chunk) => {
      count.add(chunk.length);
      handle.delivered(chunk.length);
      try {
        take(chunk);
      } catch (error) {
        thrown = { error };
        throw error;
      }
    });
    return count.end();
  } catch (err) {
    if (thrown) throw thrown.error;
    throw translateError(err, response.info, response.signal);
  }
}

/** The last decoded body size per pool (one per stream): the first guess of the next page's. */
const lastBodySize = new WeakMap<BodyPool, number>();
/** A first guess for an inflated body with nothing else to go on: a typical page inflates ~7x. */
const INFLATE_GUESS = 8;
const MAX_GUESS = 64 * 1024 * 1024;

/**
 * Reads a body into a buffer the decoder hands out and takes back after decoding, so pages do not each
 * leave a body-sized allocation behind (nor a `Buffer.concat` of the chunks): every chunk, inflated or not,
 * is copied once, as it comes. A plain body of declared length gets a buffer of that size; an inflated (or
 * undeclared) one a guess from the last page of this pool, grown by doubling if the guess was short.
 */
async function readPooled(
  response: HttpResponse,
  pool: BodyPool,
  maxBytes: number,
  handle: RequestHandle,
  budget: LoopBudget,
): Promise<{ body: Buffer; pooled: Buffer }> {
  const declared = declaredLength(response);
  const announced = contentLength(response.headers);
  const guess = Math.min(
    MAX_GUESS,
    maxBytes,
    lastBodySize.get(pool) ?? (announced ? announced * INFLATE_GUESS : 1024 * 1024),
  );
  let pooled = pool.bodyBuffer(declared ? declared : Math.max(1, guess));
  let size = 0;
  try {
    await readCounted(response, maxBytes, handle, budget, (bytes) => {
      if (size + bytes.length > pooled.length) {
        const bigger = pool.bodyBuffer(Math.max(2 * pooled.length, size + bytes.length));
        pooled.copy(bigger, 0, 0, size);
        pool.releaseBody(pooled);
        pooled = bigger;
      }
      bytes.copy(pooled, size);
      size += bytes.length;
    });
  } catch (err) {
    pool.releaseBody(pooled);
    // The copy's own errors too, as before (readCounted has translated the read's).
    throw translateError(err, response.info, response.signal);
  }
  if (!declared) lastBodySize.set(pool, size);
  return { body: pooled.subarray(0, size), pooled };
}

/**
 * Reads one planned page: its requests go through `requests` (told of each retry, and ended here);
 * `kept`, the query's first page already in hand, serves the first request when it is this range.
 */
export async function fetchPage(
  ctx: PageFetchContext,
  range: PageRange,
  signal: AbortSignal,
  requests: PageRequests,
  kept?: KeptPage,
): Promise<PageData> {
  try {
    return await fetchPageParts(ctx, range, signal, requests, kept);
  } finally {
    requests.end();
  }
}

async function fetchPageParts(
  ctx: PageFetchContext,
  range: PageRange,
  signal: AbortSignal,
  requests: PageRequests,
  kept: KeptPage | undefined,
): Promise<PageData> {
  // Used once, for exactly its range: a retry (or anything else) is a real GET.
  let keptLeft =
    kept && kept.range.start === range.start && kept.range.limit === range.limit ? kept : undefined;
  const end = range.start + range.limit; // exclusive
  const parts: PagePart[] = [];
  let bytes = 0;
  let wireBytes = 0;
  let requestCount = 0;
  let next = range.start;
  while (next < end) {
    const sub = { start: next, limit: Math.min(end - next, ctx.served ?? Number.POSITIVE_INFINITY) };
    let piece: Piece;
    try {
      // Retried as a whole (request, body and decode), so a body cut mid-way costs one more request,
      // never a lost or repeated row: the rows of a failed attempt are dropped with it.
      piece = await withRetry(
        () => {
          const from = keptLeft;
          keptLeft = undefined;
          return fetchPiece(ctx, sub, signal, requests, from);
        },
        ctx.pages.retryPolicy,
        `GET page start=${sub.start} limit=${sub.limit}`,
        signal,
        (event) => {
          ctx.pages.reportRetry(event);
          requests.retried(event);
        },
      );
    } catch (err) {
      throw err instanceof DqsError ? atPage(err, sub) : err;
    }
    requestCount++;
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
    if (piece.rows < sub.limit) ctx.served = Math.min(ctx.served ?? piece.rows, piece.rows);
    parts.push(piece.part);
    next += piece.rows;
  }
  return { range, parts, rowCount: next - range.start, bytes, wireBytes, requests: requestCount };
}
