/**
 * The two shapes one HTTP exchange with the service has: the request the layers above describe, and the
 * response the transport hands back with its body still to be read (see body.ts for reading it).
 */
import type { Readable } from 'node:stream';
import type { RequestInfo } from '../core/errors.js';

export interface HttpRequest {
  readonly method: 'GET' | 'HEAD' | 'POST';
  /** Path segments, each encoded here: never concatenated raw. A trailing '' gives a trailing slash. */
  readonly segments: readonly string[];
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly accept: string;
  readonly json?: unknown;
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
  /** `false` when the caller retries a larger unit itself (a page read including its body). */
  readonly retry?: boolean;
  /**
   * A result body, possibly large: with `compression: 'auto'`, whether to ask for compression is the
   * measured choice (see CompressionChoice), and the reader reports the page's timing through `measured()`.
   */
  readonly bulk?: boolean;
}

/** A response whose headers arrived with an acceptable status; the body is still to be read. */
export interface HttpResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body as the server encoded it before any `Content-Encoding`: already inflated. */
  readonly body: Readable;
  /** The codings undone to get `body` (`[]` when the body came as is). */
  readonly codings: readonly string[];
  /**
   * Bytes read off the socket so far, for a body read to `decoded` bytes: the compressed ones when
   * `codings` is not empty, else `decoded` itself (plain bodies are not counted twice).
   */
  readonly wireBytes: (decoded: number) => number;
  /**
   * For a `bulk` request: tells the compression choice that the body (`bytes` decoded) was read to its end,
   * timed from the response's headers.
   */
  readonly measured: (bytes: number) => void;
  readonly info: RequestInfo;
  /** Ends the request's timeout/abort wiring; call once the body is consumed or dropped. */
  readonly done: () => void;
  /**
   * For a body read as a stream of any length (`download()`): ends the whole-exchange timeout now, so only
   * undici's `bodyTimeout` (the longest silence between two chunks, = the request's timeout) still applies.
   */
  readonly streaming: () => void;
  /** The signal that aborts this exchange (the caller's, or the timeout). */
  readonly signal: AbortSignal;
}
