/** Test helpers: a real emulator on 127.0.0.1:0 and a client pointed at it; both closed after each test. */
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterEach } from 'vitest';
import { type EmulatorOptions, startEmulator } from '../src/emulator/index.js';
import { DatasetClient, toArrowIpc } from '../src/index.js';
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

/** Result page GETs the emulator has seen (HEAD, POST and metadata excluded). */
export function pageGets(emu: Emulator): number {
  return emu.requests.filter(
    (r) => r.method === 'GET' && /\/query\/[0-9a-f]{64}$/.test(r.path) && r.query.limit !== '1',
  ).length;
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

/** A result stream's batches as Arrow IPC stream bytes (what the decoder parity tests compare). */
export async function ipcBytes(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await pipeline(stream, toArrowIpc({ format: 'stream' }), async (bytes: AsyncIterable<Buffer>) => {
    for await (const b of bytes) chunks.push(b);
  });
  return Buffer.concat(chunks);
}

/** Everything a stream emits (row objects, for `output: 'rows'`). */
export async function allOf(stream: Readable): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const item of stream) out.push(item);
  return out;
}
