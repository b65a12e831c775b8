/**
 * `PageDecoder`: the one place where a page goes to its format's fast decoder or, when there is none or
 * it declines the page, to the reference. One per stream (a fast decoder keeps buffers between pages).
 */

import type { DecodedColumns } from '../convert/column-data.js';
import type { ColumnPlan } from '../convert/plan.js';
import type { PageRef } from '../core/errors.js';
import type { LoopBudget } from '../core/loop-budget.js';
import {
  type DecodableFormat,
  type DecodedPage,
  type DecodeSteps,
  type FastDecoder,
  type FastDecoderOptions,
  FORMATS,
  type PageStream,
  REFERENCE_DEFAULTS,
  type ReferenceOptions,
  type ResultFormat,
} from './formats.js';

/** A page body as the page fetcher offers it: whole, or as it arrives. The decoder takes one of the two. */
export interface PageBody {
  /**
   * The whole body. With a `pool` it is read into a buffer of the pool (inflated bodies too), returned
   * as `pooled` (give it back with `pool.releaseBody()` once nothing reads it).
   */
  whole(pool?: BodyPool): Promise<{ body: Buffer; pooled: Buffer | undefined }>;
  /** The body's chunks as they arrive. */
  chunks(): AsyncIterable<Buffer>;
  /**
   * The body's chunks handed to `take` as they arrive, a bounded number of bytes per turn of the event
   * loop (core/loop-budget.ts); settles once the body has ended. Absent: a body already in hand.
   */
  each?(take: (chunk: Buffer) => void): Promise<void>;
  /** The body's length when it is declared (not inflated), for sizing. */
  readonly declaredBytes?: number | undefined;
}

/** Hands out and takes back body buffers, so pages do not each leave a body-sized allocation behind. */
export interface BodyPool {
  bodyBuffer(size: number): Buffer;
  releaseBody(buffer: Buffer): void;
}

export interface PageDecoderOptions extends FastDecoderOptions, Partial<ReferenceOptions> {
  /** Use the format's fast decoder when it has one (`false`: always the reference, for tests and benches). */
  readonly fast: boolean;
  /** Whose turns of the event loop decodes take, one step a turn and one decode at a time. */
  readonly budget: LoopBudget;
}

/** See `PageDecoder.#keepLeft`. */
const KEEP_FIRST = 2;
/**
 * Bytes of a page's chunks kept for the reference at most: past them a page is no small result, and its
 * chunks kept beside its decode would double its memory (a page of one 200 MB string).
 */
const KEEP_BYTES = 16 * 1024 * 1024;

export class PageDecoder {
  readonly name: DecodableFormat;
  readonly format: ResultFormat;
  readonly plan: readonly ColumnPlan[];
  readonly #fast: FastDecoder | undefined;
  readonly #pool: BodyPool | undefined;
  readonly #reference: ReferenceOptions;
  readonly #budget: LoopBudget;
  /**
   * Whether pages are decoded as they arrive (when the format can). Once a page of the stream was not
   * ordinary (values its column rejects, odd spellings), the stream's pages are read whole, as before:
   * such a result tends to have more, and each would otherwise cost a second request.
   */
  #asItArrives = true;
  /**
   * Pages decoded as they arrive whose chunks are kept for the reference till their end: the first ones
   * of a stream, so that a small result (one or two pages) never costs a second request. After them a
   * declined page is asked for again (`PageDeclined`).
   */
  #keepLeft = KEEP_FIRST;

  constructor(name: DecodableFormat, plan: readonly ColumnPlan[], options: PageDecoderOptions) {
    this.name = name;
    this.format = FORMATS[name];
    this.plan = plan;
    const fast = options.fast ? this.format.fast?.(plan, options) : undefined;
    this.#fast = fast;
    this.#pool = fast?.bodyBuffer && fast.releaseBody ? (fast as BodyPool) : undefined;
    this.#reference = { invalidUtf8: options.invalidUtf8 ?? REFERENCE_DEFAULTS.invalidUtf8 };
    this.#budget = options.budget;
  }

  /**
   * Decodes one page: the fast decoder on the whole body, and the reference on the same bytes if it
   * declines (the reference then gives the same rows or the right error, with its location); without a
   * fast decoder, the reference reads the body as it arrives.
   */
  async decode(body: PageBody, where: PageRef): Promise<DecodedPage> {
    const fast = this.#fast;
    if (fast === undefined) return this.format.reference(body.chunks(), this.plan, where, this.#reference);
    if (fast.stream && body.each && this.#asItArrives) {
      const keep = this.#keepLeft > 0;
      if (keep) this.#keepLeft--;
      return this.#decodeAsItArrives(fast.stream(where, body.declaredBytes), body.each, where, keep);
    }
    const { body: bytes, pooled } = await body.whole(this.#pool);
    try {
      return (
        (await this.#budget.inTurns(fast.decode(bytes, where))) ??
        (await this.format.reference(once(bytes), this.plan, where, this.#reference))
      );
    } finally {
      // Nothing reads the body's bytes any more: the decoders copied what they keep.
      if (pooled) this.#pool!.releaseBody(pooled);
    }
  }

  /**
   * A page decoded chunk by chunk as they come (each in the turn that reads it, so a decode never holds
   * the loop for more than the turn's bytes). No page-sized buffer is filled first, and (past the first
   * pages, `keep`) no chunk is kept once decoded (see table-json-stream.ts): a page that is not ordinary
   * is then a `PageDeclined`, and the page fetcher asks for it again, read whole, for the reference.
   */
  async #decodeAsItArrives(
    stream: PageStream,
    each: (take: (chunk: Buffer) => void) => Promise<void>,
    where: PageRef,
    keep: boolean,
  ): Promise<DecodedPage> {
    let chunks: Buffer[] | undefined = keep ? [] : undefined;
    let kept = 0;
    // Chunks that came while the page's buffers were being made.
    let early: Buffer[] | undefined = [];
    const feed = (chunk: Buffer) => {
      stream.push(chunk);
      if (stream.declined && !chunks) throw this.#declined();
    };
    const take = (chunk: Buffer) => {
      kept += chunk.length;
      if (kept > KEEP_BYTES) chunks = undefined;
      chunks?.push(chunk);
      if (early) early.push(chunk);
      else feed(chunk);
    };
    // Read from now on: a body nobody listens to would make its error (a cut) an uncaught exception.
    const reading = each(take);
    reading.catch(() => {}); // awaited below, once the buffers are made
    try {
      // The page's buffers first, in a turn of their own and one page at a time (core/loop-budget.ts).
      await this.#budget.inTurns(prepared(stream));
      const waiting = early;
      early = undefined;
      for (const chunk of waiting) feed(chunk);
      await reading;
    } catch (error) {
      stream.abandon();
      throw error;
    }
    const page = await this.#budget.inTurns(stream.finish());
    if (page !== undefined) return page;
    if (!chunks) throw this.#declined();
    this.#asItArrives = false;
    return this.format.reference(fromList(chunks), this.plan, where, this.#reference);
  }

  /** A page declined with its chunks gone: the next pages are read whole (see `#asItArrives`). */
  #declined(): PageDeclined {
    this.#asItArrives = false;
    return new PageDeclined();
  }

  /** Hands the buffers of a decoded page back to the fast decoder once its rows were copied out. */
  recycle(part: DecodedColumns): void {
    this.#fast?.recycle?.(part);
  }
}

async function* once(bytes: Buffer): AsyncGenerator<Buffer> {
  yield bytes;
}

// biome-ignore lint/correctness/useYield: one step, run by `inTurns` in a turn of its own
function* prepared(stream: PageStream): DecodeSteps<void> {
  stream.prepare();
}

async function* fromList(chunks: readonly Buffer[]): AsyncGenerator<Buffer> {
  yield* chunks;
}

/**
 * A page decoded as it arrived was not ordinary (its fast decoder declined it): the page fetcher asks for
 * it again and reads it whole, so the reference decides (the same rows, or the error with its place).
 * Keeping every chunk of every page in flight for that rare case would hold a page body per request
 * out, which is what decoding as the bytes arrive saves. Never seen outside the page fetcher.
 */
export class PageDeclined extends Error {
  constructor() {
    super('the page is not an ordinary one: it is read again for the reference decoder');
    this.name = 'PageDeclined';
  }
}
