/**
 * Writes a `Reply` to the socket, normally or through a transmission fault (`cut`, `trickle`).
 */
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Fault } from './faults.js';
import type { Reply } from './reply.js';
import { type Pacer, pacedWrite } from './shaping.js';

/** Bandwidth limits of one response: its connection's and the emulator's total, when set. */
export interface Pacing {
  readonly connection: Pacer | undefined;
  readonly total: Pacer | undefined;
}

function headersOf(reply: Reply): Record<string, string> {
  const headers: Record<string, string> = { ...reply.headers };
  if (reply.body !== null) headers['Content-Length'] = String(reply.body.length);
  if (reply.close) headers.Connection = 'close';
  return headers;
}

/** Resolves when the reply is handed to the socket, or the connection is gone. */
export async function transmit(
  res: ServerResponse,
  reply: Reply,
  fault: Fault | undefined,
  signal: AbortSignal,
  pacing?: Pacing,
): Promise<void> {
  res.writeHead(reply.status, headersOf(reply));
  // A HEAD response carries no body, whatever Content-Length says.
  const body = res.req.method === 'HEAD' || reply.body === null ? Buffer.alloc(0) : reply.body;

  if (fault?.kind === 'cut') {
    // Always short of the full body, so the cut is observable even when afterBytes >= length.
    const keep = Math.max(0, Math.min(fault.afterBytes, body.length - 1));
    const socket = res.socket;
    if (keep > 0) res.write(body.subarray(0, keep));
    else res.flushHeaders();
    // `end()` sends what is queued, then FIN: the client sees headers, `keep` bytes, then the close.
    socket?.end();
    socket?.once('finish', () => socket.destroy());
    return;
  }

  if (fault?.kind === 'trickle') {
    for (let at = 0; at < body.length; at += fault.bytesPerChunk) {
      if (res.destroyed || signal.aborted) return;
      res.write(body.subarray(at, at + fault.bytesPerChunk));
      if (at + fault.bytesPerChunk < body.length) {
        try {
          await sleep(fault.intervalMs, undefined, { signal });
        } catch {
          res.destroy();
          return;
        }
      }
    }
    res.end();
    return;
  }

  if (pacing && (pacing.connection || pacing.total) && body.length > 0) {
    await pacedWrite(res, body, pacing.connection, pacing.total, signal);
    return;
  }
  res.end(body);
}
