/**
 * Content codings: what we ask for (`Accept-Encoding`) and turning what arrives back into the bytes the
 * server encoded, whether we asked or not. zlib streams do the inflating, so it runs in libuv's thread pool
 * while the main thread decodes other pages.
 *
 * Hand-written rather than undici's `interceptors.decompress` (undici 7.30): on loopback, 10 pages of 10k
 * rows gzipped at level 1, two in flight, ours took 92 ms against 143 ms (its `read()` joins buffered
 * chunks and its zlib streams keep the 16 KiB default chunk); it also warns `ExperimentalWarning` into the
 * user's process, passes unknown codings through silently, and drops `Content-Encoding`/`Content-Length`,
 * so neither the wire bytes nor the fact of compression would reach the measurements that pick the default.
 */
import { PassThrough, pipeline, type Readable, type Transform } from 'node:stream';
import * as zlib from 'node:zlib';
import { ContentEncodingError, type RequestInfo } from '../core/errors.js';

/** The codings this runtime can decode; `zstd` only where Node's zlib has it (22.15+, not 20.18). */
export type ContentCoding = 'gzip' | 'deflate' | 'br' | 'zstd';

/** Inflated chunks of 64 KiB: a quarter of the per-chunk overhead of zlib's 16 KiB default. */
const CHUNK_SIZE = 64 * 1024;

/** RFC 9110 lets a body be encoded several times; more than this is an attack, not a configuration. */
const MAX_CODINGS = 3;

const createZstd = (zlib as unknown as { createZstdDecompress?: (o: zlib.ZlibOptions) => Transform })
  .createZstdDecompress;

const DECODERS: ReadonlyMap<string, () => Transform> = new Map<string, () => Transform>([
  ['gzip', () => zlib.createGunzip({ chunkSize: CHUNK_SIZE })],
  ['x-gzip', () => zlib.createGunzip({ chunkSize: CHUNK_SIZE })],
  ['deflate', () => zlib.createInflate({ chunkSize: CHUNK_SIZE })],
  ['br', () => zlib.createBrotliDecompress({ chunkSize: CHUNK_SIZE })],
  ...(createZstd ? ([['zstd', () => createZstd({ chunkSize: CHUNK_SIZE })]] as const) : []),
]);

/** Every coding this runtime decodes, in the order we ask for them. */
export const SUPPORTED_CODINGS: readonly ContentCoding[] = createZstd
  ? ['gzip', 'deflate', 'br', 'zstd']
  : ['gzip', 'deflate', 'br'];

export function isSupportedCoding(value: unknown): value is ContentCoding {
  return typeof value === 'string' && (SUPPORTED_CODINGS as readonly string[]).includes(value);
}

/**
 * The codings of a `Content-Encoding` header, in the order they were applied; `identity` and empty items
 * dropped. Throws a ContentEncodingError for a coding we cannot decode, before any byte is read.
 */
export function parseContentEncoding(
  value: string | string[] | undefined,
  info: RequestInfo,
  asked: string | undefined,
): string[] {
  if (value === undefined) return [];
  const raw = Array.isArray(value) ? value.join(',') : value;
  const codings = raw
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  const shown = JSON.stringify(raw.slice(0, 100));
  if (codings.length > MAX_CODINGS) {
    throw new ContentEncodingError(
      `Content-Encoding ${shown} applies ${codings.length} codings; at most ${MAX_CODINGS} are decoded`,
      raw,
      info,
    );
  }
  for (const c of codings) {
    if (!DECODERS.has(c)) {
      throw new ContentEncodingError(
        `Content-Encoding ${shown} cannot be decoded here (it decodes ${SUPPORTED_CODINGS.join(', ')}; the request asked for ${asked ?? 'no compression'})`,
        raw,
        info,
      );
    }
  }
  return codings;
}

/** The decoded body and the count of encoded bytes read from the socket so far. */
export interface DecodedBody {
  readonly body: Readable;
  readonly wireBytes: (decoded: number) => number;
}

/**
 * Decodes `source` (bytes encoded with `codings`, in the order applied). Errors reach the reader of `body`
 * typed: a decoder's as a ContentEncodingError naming the coding and the request, the source's through
 * `translate` (a cut connection stays a NetworkError and is retried). Destroying `body` destroys the source,
 * which aborts the request. Memory stays bounded whatever the ratio: zlib stops inflating while `body` is
 * not read.
 */
export function decodeBody(
  source: Readable,
  codings: readonly string[],
  header: string,
  info: RequestInfo,
  translate: (err: unknown) => Error,
): DecodedBody {
  let wire = 0;
  // Where an error began: pipeline destroys every stream with the first error, so the socket's error
  // reaches the decoders and a decoder's reaches the socket; the first stream to emit it is its origin.
  const origin = new WeakMap<object, 'socket' | 'decoder'>();
  const mark = (where: 'socket' | 'decoder') => (err: unknown) => {
    if (typeof err === 'object' && err !== null && !origin.has(err)) origin.set(err, where);
  };
  // Registered before pipeline's own listeners, so the mark is made before anyone acts on the error.
  source.on('error', mark('socket'));
  source.on('data', (chunk: Buffer) => {
    wire += chunk.length;
  });
  // Decoders in reverse order of application: the last coding applied is the first undone.
  const stages = [...codings].reverse().map((c) => DECODERS.get(c)!());
  // Readers see this stream, not the last zlib stage, so that the error they get is ours: pipeline would
  // destroy its own streams with the raw zlib error before telling us.
  const body = new PassThrough({ readableHighWaterMark: CHUNK_SIZE });
  const fail = (err: unknown) => {
    if (body.destroyed) return; // the reader dropped the body, or an earlier error already ended it
    if (typeof err === 'object' && err !== null && origin.get(err) !== 'decoder') {
      body.destroy(translate(err));
      return;
    }
    const what = codings.join(', ');
    // Z_BUF_ERROR: the HTTP body ended (complete by its framing) in the middle of the compressed data.
    const problem =
      (err as { code?: string }).code === 'Z_BUF_ERROR'
        ? `the body ends before its ${what} data does`
        : `the body is not ${what} data`;
    body.destroy(
      new ContentEncodingError(
        `Content-Encoding says ${what} but ${problem} (${(err as Error).message})`,
        header,
        info,
        { cause: err },
      ),
    );
  };
  // Every stage's error ends the body, not only those pipeline reports: a body cut inside the compressed
  // data fails in the last stage's flush, after pipeline has already called back without an error, and
  // `.pipe()` does not pass errors on, so the reader would wait forever (no timeout runs once the socket
  // has ended).
  for (const stage of stages) {
    stage.on('error', (err: unknown) => {
      mark('decoder')(err);
      fail(err);
    });
  }
  pipeline([source, ...stages], (err) => {
    if (err) fail(err);
  });
  stages.at(-1)!.pipe(body);
  body.on('close', () => {
    // The reader is done or gone: stop the socket and the decoders (a no-op once they have ended).
    if (!source.destroyed) source.destroy();
    for (const s of stages) if (!s.destroyed) s.destroy();
  });
  return { body, wireBytes: () => wire };
}

/** A response's body as the server encoded it, the codings undone, and its wire bytes (see `decodeBody`). */
export interface InflatedBody extends DecodedBody {
  readonly codings: string[];
}

/**
 * The body of a response, inflated when it came with a `Content-Encoding` (asked for or not). A coding we
 * cannot decode fails here, the body destroyed unread. Bodies that cannot exist (HEAD, 204, 304) are not
 * decoded.
 */
export function inflateResponse(
  res: {
    readonly statusCode: number;
    readonly headers: Record<string, string | string[] | undefined>;
    readonly body: Readable;
  },
  method: string,
  info: RequestInfo,
  asked: string,
  translate: (err: unknown) => Error,
): InflatedBody {
  const encoded = method !== 'HEAD' && res.statusCode !== 204 && res.statusCode !== 304;
  const raw = res.headers['content-encoding'];
  let codings: string[] = [];
  try {
    if (encoded) codings = parseContentEncoding(raw, info, asked);
  } catch (err) {
    res.body.on('error', () => {});
    res.body.destroy();
    throw err;
  }
  if (codings.length === 0) return { body: res.body, codings, wireBytes: (decoded) => decoded };
  return { ...decodeBody(res.body, codings, String(raw), info, translate), codings };
}

/**
 * How each coding's data begins (RFC 1952's gzip magic, RFC 1950's zlib header, zstd's frame magic);
 * brotli has no signature.
 */
const SIGNATURES: ReadonlyMap<string, (b: Uint8Array) => boolean> = new Map([
  ['gzip', (b: Uint8Array) => b[0] === 0x1f && b[1] === 0x8b],
  ['x-gzip', (b: Uint8Array) => b[0] === 0x1f && b[1] === 0x8b],
  ['deflate', (b: Uint8Array) => b.length >= 2 && (b[0]! & 0x0f) === 8 && ((b[0]! << 8) | b[1]!) % 31 === 0],
  ['zstd', (b: Uint8Array) => b[0] === 0x28 && b[1] === 0xb5 && b[2] === 0x2f && b[3] === 0xfd],
]);

/** Whether `first` (a body's first bytes) begins data of `coding`; undefined when it cannot tell (br). */
export function startsAsCoded(coding: string, first: Uint8Array): boolean | undefined {
  return SIGNATURES.get(coding)?.(first);
}

/** The first chunk of `body`, put back so the body still reads whole; null for an empty body. */
async function peek(body: Readable): Promise<Buffer | null> {
  const first = await new Promise<Buffer | null>((resolve, reject) => {
    const done = () => {
      body.off('readable', readable);
      body.off('end', ended);
      body.off('error', failed);
    };
    const readable = () => {
      const chunk = body.read() as Buffer | null;
      if (chunk === null) return;
      done();
      resolve(chunk);
    };
    const ended = () => {
      done();
      resolve(null);
    };
    const failed = (err: unknown) => {
      done();
      reject(err);
    };
    body.on('readable', readable);
    body.once('end', ended);
    body.once('error', failed);
    readable();
  });
  if (first !== null) body.unshift(first);
  return first;
}

/**
 * `inflateResponse` for an `undici` that inflates bodies itself: Bun's, built on its fetch, hands the body
 * over inflated and keeps the `Content-Encoding` (and the wire's `Content-Length`). Told by what the
 * body holds: one that begins as its last coding's data is inflated here as anywhere; one that does not
 * (or in brotli, which has no signature) was inflated already and is read as it is. The codings are
 * still reported, so its `Content-Length` (the wire's) is not taken for its length.
 */
export async function inflateFetchedResponse(
  res: Parameters<typeof inflateResponse>[0],
  method: string,
  info: RequestInfo,
  asked: string,
  translate: (err: unknown) => Error,
): Promise<InflatedBody> {
  const encoded = method !== 'HEAD' && res.statusCode !== 204 && res.statusCode !== 304;
  const codings = encoded ? parseContentEncoding(res.headers['content-encoding'], info, asked) : [];
  if (codings.length === 0) return inflateResponse(res, method, info, asked, translate);
  let first: Buffer | null;
  try {
    first = await peek(res.body);
  } catch (err) {
    throw translate(err);
  }
  if (first !== null && startsAsCoded(codings.at(-1)!, first) === true) {
    return inflateResponse(res, method, info, asked, translate);
  }
  return { body: res.body, codings, wireBytes: (decoded) => decoded };
}
