import type { IncomingMessage } from 'node:http';
import type { BodyResult } from './handlers/context.js';

/**
 * Reads a request body up to `maxBytes`. Beyond it (declared or streamed) it stops reading and reports
 * `tooLarge`; the reply then closes the connection rather than drain an arbitrarily large upload.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<BodyResult> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.resolve({ ok: false, tooLarge: true });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        // Stop reading; the reply closes the connection instead of draining the rest.
        req.pause();
        resolve({ ok: false, tooLarge: true });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve({ ok: true, body: Buffer.concat(chunks) });
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    // A client that hangs up mid-body may emit neither 'end' nor 'error': without this the read would
    // wait for ever.
    const onClose = () => onError(new Error('the client closed the connection before the body ended'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
