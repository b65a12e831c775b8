/**
 * Content coding as a real front end applies it: chosen from the request's `Accept-Encoding`, only for
 * text bodies (JSON, CSV) worth compressing, announced with `Content-Encoding` and `Vary: Accept-Encoding`.
 * The coding runs on libuv's thread pool (zlib's async API), never on the event loop.
 */

import { promisify } from 'node:util';
import * as zlib from 'node:zlib';

/** The codings the emulator can apply; `zstd` only where the runtime's zlib has it. */
export type ContentCoding = 'gzip' | 'deflate' | 'br' | 'zstd';

type Compress = (body: Buffer, level: number) => Promise<Buffer>;

const gzip = promisify(zlib.gzip);
const deflate = promisify(zlib.deflate);
const brotli = promisify(zlib.brotliCompress);

/**
 * zstd arrived in Node 22.15 / 23.8 (`zlib.zstdCompress`); Node 20 lacks it. Detected, not assumed by
 * version, so a runtime that backports or drops it is read correctly.
 */
const zstdCompress = (zlib as unknown as Record<string, unknown>).zstdCompress as
  | ((body: Buffer, options: object, callback: (err: Error | null, out: Buffer) => void) => void)
  | undefined;
const zstdLevelParam = (zlib.constants as unknown as Record<string, number | undefined>)
  .ZSTD_c_compressionLevel;

const COMPRESSORS: Partial<Record<ContentCoding, Compress>> = {
  gzip: (body, level) => gzip(body, { level }),
  deflate: (body, level) => deflate(body, { level }),
  br: (body, level) =>
    brotli(body, {
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: level,
        [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    }),
};
if (typeof zstdCompress === 'function' && zstdLevelParam !== undefined) {
  COMPRESSORS.zstd = (body, level) =>
    new Promise((resolve, reject) =>
      zstdCompress(body, { params: { [zstdLevelParam]: level } }, (err, out) =>
        err ? reject(err) : resolve(out),
      ),
    );
}

/** Every coding the emulator knows, in its default order of preference when the client weighs them equally. */
export const ALL_CODINGS: readonly ContentCoding[] = Object.freeze(['gzip', 'br', 'zstd', 'deflate']);

/** The codings this runtime can produce, in default preference order (gzip first, as nginx). */
export const AVAILABLE_CODINGS: readonly ContentCoding[] = Object.freeze(
  ALL_CODINGS.filter((c) => COMPRESSORS[c] !== undefined),
);

/** Bodies shorter than this go out as they are: the coding's header and trailer would eat the gain. */
export const MIN_COMPRESS_BYTES = 256;

/** JSON (any `+json`) and CSV; XLSX is already a zip and XLS is left as the service sends it. */
export function isCompressible(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || type.endsWith('+json') || type === 'text/csv';
}

export function compress(body: Buffer, coding: ContentCoding, level: number): Promise<Buffer> {
  const compressor = COMPRESSORS[coding];
  if (compressor === undefined) return Promise.reject(new Error(`${coding} is not available`));
  return compressor(body, level);
}

/**
 * The coding to answer with, by RFC 9110 §12.5.3: the highest `q` among the offered codings (ties go to the
 * earlier one in `offered`), `*` standing for every coding not named, `q=0` refusing. Identity competes only
 * with an explicit weight (`identity;q=…` or `*;q=…`): `gzip;q=0.5` alone still means "gzip, please".
 * `undefined` means identity, also when the client accepts nothing we have: like nginx, the emulator
 * then sends the body as it is rather than 406.
 */
export function chooseCoding(
  acceptEncoding: string | undefined,
  offered: readonly ContentCoding[],
): ContentCoding | undefined {
  if (acceptEncoding === undefined || offered.length === 0) return undefined;
  const weights = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [name = '', ...params] = part.split(';').map((s) => s.trim());
    if (name === '') continue;
    let q = 1;
    for (const param of params) {
      const m = /^q\s*=\s*([0-9.]+)$/i.exec(param);
      if (m) q = Number(m[1]);
    }
    if (!Number.isFinite(q) || q < 0 || q > 1) continue; // malformed weight: ignore the member
    const key = name.toLowerCase();
    // Older agents spell gzip `x-gzip` (RFC 9110 §8.4.1.3).
    const coding = key === 'x-gzip' ? 'gzip' : key;
    if (!weights.has(coding)) weights.set(coding, q);
  }
  const star = weights.get('*');
  let best: ContentCoding | undefined;
  let bestQ = 0;
  for (const coding of offered) {
    const q = weights.get(coding) ?? star ?? 0;
    if (q > bestQ) {
      best = coding;
      bestQ = q;
    }
  }
  const identityQ = weights.get('identity') ?? star;
  if (best !== undefined && identityQ !== undefined && identityQ > bestQ) return undefined;
  return best;
}
