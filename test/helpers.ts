/** Test helpers: a real emulator on 127.0.0.1:0 and a client pointed at it; both closed after each test. */
import { afterEach } from 'vitest';
import { type EmulatorOptions, startEmulator } from '../src/emulator/index.js';
import { DatasetClient } from '../src/index.js';
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
