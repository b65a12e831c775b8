/**
 * What each request asks for (`Accept-Encoding`) and, for a result page in `compression: 'auto'`, the
 * timing of its body handed to the measured choice (compression-choice.ts) once it is read.
 */
import { CompressionChoice } from './compression-choice.js';
import type { RequestCompression } from './options.js';

/** The measuring of one page body: `measured` when read to its end, `end` whatever became of it. */
export interface BodyTiming {
  readonly measured: (bytes: number) => void;
  readonly end: () => void;
}

export class CompressionPolicy {
  readonly #setting: RequestCompression;
  /** The user's own `accept-encoding` header, which wins over the setting. */
  readonly #override: string | undefined;
  /** Only in `compression: 'auto'`: the per-connection measurement behind each result page's request. */
  readonly #choice: CompressionChoice | undefined;

  constructor(setting: RequestCompression, override: string | undefined) {
    this.#setting = setting;
    this.#override = override;
    this.#choice = setting.mode === 'auto' ? new CompressionChoice() : undefined;
  }

  /** The `Accept-Encoding` of a request: a page's (`bulk`) by measurement in 'auto'; JSON answers always ask. */
  acceptEncoding(bulk: boolean | undefined): string {
    const setting = this.#setting;
    const compress = setting.mode === 'never' ? false : bulk && this.#choice ? this.#choice.next() : true;
    return this.#override ?? (compress ? setting.acceptEncoding : 'identity');
  }

  /**
   * For a page's response whose headers came at `headersAt` (asked with `acceptEncoding`): the timing the
   * choice learns from. Undefined when nothing is measured (not a page, or not 'auto').
   */
  bodyTiming(bulk: boolean | undefined, acceptEncoding: string, headersAt: number): BodyTiming | undefined {
    const choice = bulk ? this.#choice : undefined;
    if (!choice) return undefined;
    const reading = choice.bodyStarted(headersAt);
    return {
      measured: (bytes) => {
        const now = performance.now();
        choice.record(acceptEncoding !== 'identity', bytes, now - headersAt, reading.sharing(now));
      },
      end: () => reading.end(performance.now()),
    };
  }

  /** What 'auto' measured on this connection so far, in ms per decoded MB. */
  get measured(): { readonly compressed?: number; readonly plain?: number } | undefined {
    return this.#choice?.measured;
  }
}
