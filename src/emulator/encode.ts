/**
 * The content-coding step between routing and transmission: compresses a reply the client accepts
 * compressed (from the page cache when the body is a cached page), or applies an `encoding` fault.
 */
import { chooseCoding, compress, isCompressible, MIN_COMPRESS_BYTES } from './compression.js';
import type { Fault } from './faults.js';
import type { ServedCompression } from './options.js';
import type { PageCache } from './page-cache.js';
import type { Reply } from './reply.js';

function headerOf(reply: Reply, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const [key, value] of Object.entries(reply.headers)) if (key.toLowerCase() === lower) return value;
  return undefined;
}

export async function encodeReply(
  reply: Reply,
  acceptEncoding: string | undefined,
  compression: ServedCompression,
  pages: PageCache,
  fault: Fault | undefined,
): Promise<Reply> {
  if (fault?.kind === 'encoding') {
    const header = fault.contentEncoding ?? (fault.encodeWith === 'identity' ? undefined : fault.encodeWith);
    const body =
      reply.body === null || fault.encodeWith === 'identity'
        ? reply.body
        : await compress(reply.body, fault.encodeWith, compression.level);
    return {
      ...reply,
      headers: { ...reply.headers, ...(header !== undefined ? { 'Content-Encoding': header } : {}) },
      body,
    };
  }
  if (compression.codings.length === 0 || !isCompressible(headerOf(reply, 'Content-Type'))) return reply;
  // The answer depends on Accept-Encoding whether or not this one is compressed: caches must know.
  const headers = { ...reply.headers, Vary: 'Accept-Encoding' };
  const body = reply.body;
  const coding = chooseCoding(acceptEncoding, compression.codings);
  if (coding === undefined || body === null || body.length < MIN_COMPRESS_BYTES) return { ...reply, headers };
  const encoded =
    reply.cacheKey === undefined
      ? await compress(body, coding, compression.level)
      : await pages.get(`${reply.cacheKey}|${coding}|${compression.level}`, () =>
          compress(body, coding, compression.level),
        );
  return { ...reply, headers: { ...headers, 'Content-Encoding': coding }, body: encoded };
}
