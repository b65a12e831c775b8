/**
 * Reading a response body, bounded: the one place for the rules every reader keeps. A body is held to its
 * Content-Length (longer is a ProtocolError, shorter a NetworkError: a cut, retried as one), never read
 * past a byte limit (a ResponseTooLargeError as soon as it passes, before any byte when a plain body is
 * declared larger), refused as a compression bomb when it inflates too far, and a text too long for V8
 * is a ResponseTooLargeError too. The page reader (query/page-fetcher.ts) builds on `countBody`,
 * `bodyLimit` and `asResponseTooLarge`.
 */
import { constants as bufferConstants } from 'node:buffer';
import type { Dispatcher } from 'undici';
import { NetworkError, ProtocolError, type RequestInfo, ResponseTooLargeError } from '../core/errors.js';
import type { HttpResponse } from './exchange.js';
import { translateError } from './failures.js';
import type { ResponseHeaders } from './headers.js';

const { MAX_STRING_LENGTH } = bufferConstants;

/**
 * Drops a body we no longer need. undici reports a destroyed unread body as an 'error' event; nobody is
 * listening for it any more, so it is swallowed here instead of surfacing as an uncaught exception.
 */
export function discardBody(response: HttpResponse): void {
  if (response.body.destroyed) return;
  response.body.on('error', () => {});
  response.body.destroy();
}

/** Reads a body to its end only to free the connection (a 401 before the retry); ends the exchange. */
export async function drain(res: HttpResponse): Promise<void> {
  try {
    // undici's own body can be dumped (keeping the connection); an inflating one is just dropped.
    const dump = (res.body as Partial<Dispatcher.ResponseData['body']>).dump;
    if (typeof dump === 'function') await dump.call(res.body);
    else discardBody(res);
  } catch {
    // a body we are discarding may fail; nothing depends on it
  } finally {
    res.done();
  }
}

/**
 * `err` as the error to throw for a body made into a string: V8 cannot make a string past
 * `MAX_STRING_LENGTH` characters and throws a plain `Error` (`ERR_STRING_TOO_LONG`); that is a body too
 * large to read as text (a ResponseTooLargeError against `limit`). Any other error is returned as is.
 */
export function asResponseTooLarge(err: unknown, info: RequestInfo, limit: number): unknown {
  if ((err as NodeJS.ErrnoException | null)?.code !== 'ERR_STRING_TOO_LONG') return err;
  return new ResponseTooLargeError(info, limit, undefined, { cause: err });
}

/** A body as UTF-8 text; one too long for a string is a `ResponseTooLargeError` (see `asResponseTooLarge`). */
export function bodyText(body: Buffer, info: RequestInfo): string {
  try {
    return body.toString('utf8');
  } catch (err) {
    throw asResponseTooLarge(err, info, MAX_STRING_LENGTH);
  }
}

/** The Content-Length header as a byte count, whatever the coding; undefined when absent or not one integer. */
export function contentLength(headers: ResponseHeaders): number | undefined {
  const value = headers['content-length'];
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return /^\d+$/.test(trimmed) ? Number(trimmed) : undefined;
}

/**
 * A body's declared decoded length: the bytes it must have. Undefined when the body is inflated (the
 * header then gives the wire's length, not the decoded one) or the header is not one plain integer.
 */
export function declaredLength(response: HttpResponse): number | undefined {
  return response.codings.length > 0 ? undefined : contentLength(response.headers);
}

/** Inflated bytes past which a body may inflate at most this many times its wire size. */
const BOMB_FLOOR = 32 * 1024 * 1024;
/** Real result pages inflate 7-15x (gzip, brotli); 200x past 32 MiB is a compression bomb, not data. */
const BOMB_RATIO = 200;

/**
 * Counts a body's decoded bytes as they are read: throws a ResponseTooLargeError the moment they pass
 * `maxBytes`, or once a compressed body inflates more than 200-fold past 32 MiB (a gzip bomb would
 * otherwise fill memory up to `maxBytes` before failing). A body declared larger than `maxBytes` (without
 * compression, where the declared length is the decoded one) fails before any byte is read.
 */
export function bodyLimit(response: HttpResponse, maxBytes: number): (chunkBytes: number) => number {
  const tooLarge = () => {
    discardBody(response);
    return new ResponseTooLargeError(response.info, maxBytes);
  };
  if ((declaredLength(response) ?? 0) > maxBytes) throw tooLarge();
  let size = 0;
  return (chunkBytes) => {
    size += chunkBytes;
    if (size > maxBytes) throw tooLarge();
    if (size > BOMB_FLOOR && response.codings.length > 0 && size > BOMB_RATIO * response.wireBytes(size)) {
      discardBody(response);
      throw new ResponseTooLargeError(
        response.info,
        maxBytes,
        `its ${response.codings.join(', ')} body inflates more than ${BOMB_RATIO}-fold (${size} bytes from ${response.wireBytes(size)}): refused as a compression bomb`,
      );
    }
    return size;
  };
}

/** A body's bytes counted against its Content-Length and the limits (see `countBody`). */
export interface BodyCount {
  /** The declared decoded length (`declaredLength`), if any. */
  readonly declared: number | undefined;
  /** Decoded bytes counted so far. */
  readonly size: number;
  /** Counts a chunk; returns the new size. Throws past the declared length or the limits. */
  add(chunkBytes: number): number;
  /** The body has ended: returns its size; throws a NetworkError when it is shorter than declared. */
  end(): number;
}

/**
 * Every whole-body reader's count: `bodyLimit`'s bounds, and the Content-Length held. HTTP/1.1 ends a
 * body at its Content-Length, but a dispatcher (a proxy, an interceptor) may not, so a longer body is a
 * ProtocolError; a shorter one is a cut (a NetworkError, retried like a reset).
 */
export function countBody(response: HttpResponse, maxBytes: number): BodyCount {
  const limit = bodyLimit(response, maxBytes);
  const declared = declaredLength(response);
  let size = 0;
  return {
    declared,
    get size() {
      return size;
    },
    add(chunkBytes) {
      if (declared !== undefined && size + chunkBytes > declared) {
        throw new ProtocolError(
          `the body is longer than its Content-Length of ${declared} bytes`,
          response.info,
        );
      }
      size = limit(chunkBytes);
      return size;
    },
    end() {
      if (declared !== undefined && size < declared) {
        throw new NetworkError(
          response.info,
          `the body ended after ${size} of its ${declared} declared bytes`,
        );
      }
      return size;
    },
  };
}

/** Reads a body into one Buffer, failing fast past `maxBytes` (decoded) instead of growing without bound. */
export async function readBounded(response: HttpResponse, maxBytes: number): Promise<Buffer> {
  return (await readWhole(response, maxBytes, false)).bytes;
}

/**
 * Reads a body as UTF-8 text, bounded like `readBounded`. A large body's bytes are freed as soon as the
 * text is made, not at some later GC, so the caller's `JSON.parse` holds the text and what it parses but
 * never the bytes beside them: a body at the limit peaks near 2x its size (it was 4x).
 */
export async function readText(response: HttpResponse, maxBytes: number): Promise<string> {
  const body = await readWhole(response, maxBytes, true);
  try {
    return bodyText(body.bytes, response.info);
  } finally {
    body.release();
  }
}

/**
 * Bodies up to this size are kept as their chunks and joined at the end: quick, and small next to the
 * limit. A larger one is copied as it comes into one buffer, so no chunk list and its concatenation are
 * ever alive together.
 */
const SMALL_BODY = 1024 * 1024;

/** Where a large body's chunks are copied as they come. */
interface BodySink {
  write(chunk: Buffer, at: number): void;
  /** The first `size` bytes written. */
  bytes(size: number): Buffer;
  /** Frees the memory now if the sink can (its `bytes` then read as empty); else leaves it to the GC. */
  release(): void;
}

/** One buffer of the body's declared length. */
function exactSink(length: number): BodySink {
  const buffer = Buffer.allocUnsafeSlow(length);
  return {
    write: (chunk, at) => void chunk.copy(buffer, at),
    bytes: (size) => buffer.subarray(0, size),
    release: () => {},
  };
}

/** ES2024's resizable ArrayBuffer (in V8 since Node 20), typed here because the project's lib is ES2023. */
interface ResizableArrayBuffer extends ArrayBuffer {
  readonly maxByteLength: number;
  resize(byteLength: number): void;
}
const ResizableArrayBuffer = ArrayBuffer as unknown as new (
  byteLength: number,
  options: { maxByteLength: number },
) => ResizableArrayBuffer;

/**
 * A resizable ArrayBuffer: address space reserved up to the declared length (or `maxBytes`), pages taken
 * as the body grows (in place: never copied to grow), and given back to the system the moment it is
 * shrunk to nothing, where a dropped Buffer's memory waits for a full GC (measured: the whole body was
 * still resident while `JSON.parse` made its result).
 */
function releasableSink(declared: number | undefined, maxBytes: number): BodySink {
  const store = new ResizableArrayBuffer(declared ?? 0, { maxByteLength: declared ?? maxBytes });
  const view = new Uint8Array(store); // tracks the store's length
  return {
    write(chunk, at) {
      const end = at + chunk.length;
      if (end > store.byteLength) {
        store.resize(Math.min(store.maxByteLength, Math.max(end, 2 * store.byteLength)));
      }
      view.set(chunk, at);
    },
    bytes: (size) => Buffer.from(store, 0, size),
    release: () => store.resize(0),
  };
}

interface WholeBody {
  readonly bytes: Buffer;
  readonly release: () => void;
}

/**
 * Reads a whole body, counted by `countBody`. Small bodies are joined from their chunks (one chunk is used
 * as is), a large one is copied into a sink: with `releasable` (the body is only read to be made text), a
 * resizable buffer that `release()` gives back at once; else one exact buffer when the length is declared
 * (an undeclared one is still joined from its chunks).
 */
async function readWhole(response: HttpResponse, maxBytes: number, releasable: boolean): Promise<WholeBody> {
  const count = countBody(response, maxBytes);
  const declared = count.declared;
  let chunks: Buffer[] = [];
  let sink: BodySink | undefined;
  let size = 0;
  try {
    for await (const data of response.body) {
      const chunk = data as Buffer;
      const end = count.add(chunk.length);
      if (sink === undefined && end !== declared && (declared ?? (releasable ? end : 0)) > SMALL_BODY) {
        sink = releasable ? releasableSink(declared, maxBytes) : exactSink(declared!);
        let at = 0;
        for (const c of chunks) {
          sink.write(c, at);
          at += c.length;
        }
        chunks = [];
      }
      if (sink) sink.write(chunk, size);
      else chunks.push(chunk);
      size = end;
    }
    count.end();
  } catch (err) {
    sink?.release();
    throw translateError(err, response.info, response.signal);
  }
  if (sink) return { bytes: sink.bytes(size), release: () => sink.release() };
  return { bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), release: () => {} };
}
