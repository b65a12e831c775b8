/**
 * `PageDecoder`: the one place where a page goes to its format's fast decoder or, when there is none or
 * it declines the page, to the reference. One per stream (a fast decoder keeps buffers between pages).
 */

import type { DecodedColumns } from '../convert/column-data.js';
import type { ColumnPlan } from '../convert/plan.js';
import type { PageRef } from '../core/errors.js';
import {
  type DecodableFormat,
  type DecodedPage,
  type DecodeSteps,
  type FastDecoder,
  type FastDecoderOptions,
  FORMATS,
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
}

/** Hands out and takes back body buffers, so pages do not each leave a body-sized allocation behind. */
export interface BodyPool {
  bodyBuffer(size: number): Buffer;
  releaseBody(buffer: Buffer): void;
}

export interface PageDecoderOptions extends FastDecoderOptions, Partial<ReferenceOptions> {
  /** Use the format's fast decoder when it has one (`false`: always the reference, for tests and benches). */
  readonly fast: boolean;
}

export class PageDecoder {
  readonly name: DecodableFormat;
  readonly format: ResultFormat;
  readonly plan: readonly ColumnPlan[];
  readonly #fast: FastDecoder | undefined;
  readonly #pool: BodyPool | undefined;
  readonly #reference: ReferenceOptions;

  constructor(name: DecodableFormat, plan: readonly ColumnPlan[], options: PageDecoderOptions) {
    this.name = name;
    this.format = FORMATS[name];
    this.plan = plan;
    const fast = options.fast ? this.format.fast?.(plan, options) : undefined;
    this.#fast = fast;
    this.#pool = fast?.bodyBuffer && fast.releaseBody ? (fast as BodyPool) : undefined;
    this.#reference = { invalidUtf8: options.invalidUtf8 ?? REFERENCE_DEFAULTS.invalidUtf8 };
  }

  /**
   * Decodes one page: the fast decoder on the whole body, and the reference on the same bytes if it
   * declines (the reference then gives the same rows or the right error, with its location); without a
   * fast decoder, the reference reads the body as it arrives.
   */
  async decode(body: PageBody, where: PageRef): Promise<DecodedPage> {
    const fast = this.#fast;
    if (fast === undefined) return this.format.reference(body.chunks(), this.plan, where, this.#reference);
    const { body: bytes, pooled } = await body.whole(this.#pool);
    try {
      return (
        (await inTurns(fast.decode(bytes, where))) ??
        (await this.format.reference(once(bytes), this.plan, where, this.#reference))
      );
    } finally {
      // Nothing reads the body's bytes any more: the decoders copied what they keep.
      if (pooled) this.#pool!.releaseBody(pooled);
    }
  }

  /** Hands the buffers of a decoded page back to the fast decoder once its rows were copied out. */
  recycle(part: DecodedColumns): void {
    this.#fast?.recycle?.(part);
  }
}

/**
 * Settles when the latest decode started has ended; the next one starts after it. Module state on
 * purpose: the event loop is the process's, so the lane is too, shared by every stream's decoder.
 */
let lane: Promise<void> = Promise.resolve();

/**
 * Runs a decode's steps one per turn of the event loop (a macrotask: timers, sockets and other streams'
 * callbacks run between two steps), and one decode at a time, process-wide. A decode is ~20 ms of CPU for
 * a 4 MB page: in one go it delayed everything else on the loop by as much (the event-loop delay p99 of a
 * 500k-row `toTable()` was ~60 ms). One at a time, because when many bodies end together (a link shared
 * fairly by many requests ends them all at once) their decodes would otherwise run back to back, in one
 * microtask queue or one batch of immediates, and the requests their slots start (and the sockets' reads)
 * would wait for all of them: 0.55-0.87 s without I/O, of 3.7-4.2 s, on the WAN bench at concurrency 32.
 * In turn, the pages of a stream also finish in the order they arrived, the order the stream needs them.
 */
async function inTurns<T>(steps: DecodeSteps<T>): Promise<T> {
  const before = lane;
  let ended!: () => void;
  lane = new Promise<void>((resolve) => {
    ended = resolve;
  });
  try {
    await before;
    for (;;) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      const step = steps.next();
      if (step.done) return step.value;
    }
  } finally {
    ended();
  }
}

async function* once(bytes: Buffer): AsyncGenerator<Buffer> {
  yield bytes;
}
