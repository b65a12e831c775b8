/** Test helpers: a real emulator on 127.0.0.1:0 and a client pointed at it; both closed after each test. */
import type { Readable } from 'node:stream';
import type { RecordBatch } from 'apache-arrow';
import { afterEach, expect } from 'vitest';
import { type EmulatorOptions, startEmulator } from '../src/emulator/index.js';
import {
  DatasetClient,
  type DqsError,
  InvalidArgumentError,
  NetworkError,
  RateLimitedError,
  type RetryEvent,
  ServerError,
} from '../src/index.js';
import { ipcEncoder } from '../src/output/ipc-transform.js';
import type { ClientOptions } from '../src/transport/options.js';

type Emulator = Awaited<ReturnType<typeof startEmulator>>;

const open: { close(): Promise<void> }[] = [];

afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

export async function setup(
  emulatorOptions: EmulatorOptions = {},
  clientOptions: ClientOptions = {},
): Promise<{ emu: Emulator; client: DatasetClient }> {
  const emu = await startEmulator({ apiKey: 'test-key-123', ...emulatorOptions });
  open.push(emu);
  const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey, ...clientOptions });
  open.push(client);
  return { emu, client };
}

/** A result page GET (not the 1-row probe `query()` sends for the schema, nor HEAD, POST, metadata). */
export function isPageGet(r: {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
}): boolean {
  return r.method === 'GET' && /\/query\/[0-9a-f]{64}$/.test(r.path) && r.query.limit !== '1';
}

/** Result page GETs the emulator has seen. */
export function pageGets(emu: Emulator): number {
  return emu.requests.filter(isPageGet).length;
}

/**
 * A table-JSON page as the service sends it, for a `fault` to serve in place of the emulator's: `rows` of
 * a result with `fields`, from row `start` of `total`, asked with `limit`.
 */
export function tablePage(
  result: { readonly id: string; readonly fields: readonly unknown[] },
  rows: readonly unknown[],
  at: { readonly start: number; readonly limit: number; readonly total: number },
): string {
  return JSON.stringify({
    id: result.id,
    state: 'complete',
    total: at.total,
    count: rows.length,
    start: at.start,
    limit: at.limit,
    rows,
    fields: result.fields,
    group_fields: [],
    sort_fields: [],
    last_date_updated: '2024-01-01T00:00:00Z',
  });
}

/** Retry pauses short enough for tests (the count of retries stays the default). */
export const FAST_RETRY = { minDelayMs: 1, maxDelayMs: 5 };

/** The client's `'retry'` events from now on, as they come. */
export function retriesOf(client: DatasetClient): RetryEvent[] {
  const events: RetryEvent[] = [];
  client.on('retry', (e: RetryEvent) => events.push(e));
  return events;
}

/** What a failing fault kind looks like to the client: the status, `network`, or the error's code. */
export function kindOf(error: DqsError): string {
  if (error instanceof RateLimitedError || error instanceof ServerError) return String(error.status);
  if (error instanceof NetworkError) return 'network';
  return error.code;
}

/** The rows of a stream of batches, counted; `delayMs` after each batch plays a slow consumer. */
export async function collectRows(stream: AsyncIterable<unknown>, delayMs = 0): Promise<number> {
  let rows = 0;
  for await (const b of stream) {
    rows += (b as RecordBatch).numRows;
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
  }
  return rows;
}

export async function expectRejects<E>(promise: Promise<unknown>, check: (err: E) => void): Promise<E> {
  try {
    await promise;
  } catch (err) {
    check(err as E);
    return err as E;
  }
  throw new Error('expected a rejection');
}

/**
 * A result stream's batches as Arrow IPC stream bytes, each batch as the stream emitted it (what the
 * decoder parity tests compare): the raw encoder, not `toArrowIpc()`, which re-cuts batches and rebuilds
 * dictionaries and so would hide a difference in either.
 */
export async function ipcBytes(stream: Readable): Promise<Buffer> {
  const encoder = ipcEncoder('stream');
  const chunks: Uint8Array[] = [];
  for await (const batch of stream) chunks.push(...encoder.write(batch as RecordBatch));
  chunks.push(...encoder.close());
  return Buffer.concat(chunks);
}

/** Everything a stream emits (row objects, for `output: 'rows'`). */
export async function allOf(stream: Readable): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

/**
 * A stand-in for the rest of an application (a request handler, a socket read): a callback on each turn
 * of the event loop, a macrotask, until `stop()`. `count`: the turns so far; `times`: when each came.
 */
export function loopTurns(): { readonly count: number; readonly times: readonly number[]; stop(): void } {
  const times: number[] = [];
  let on = true;
  const tick = () => {
    times.push(performance.now());
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    get count() {
      return times.length;
    },
    times,
    stop() {
      on = false;
    },
  };
}

/** The error `run` throws (synchronously or as a rejection), which must be an InvalidArgumentError. */
export async function invalidArgumentOf(run: () => unknown): Promise<InvalidArgumentError> {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    return error as InvalidArgumentError;
  }
  throw new Error('expected an InvalidArgumentError, got none');
}
