/**
 * The built `dqs` on a shared machine and in a full or closed place: killed with SIGKILL and run again,
 * links planted by another local user, a full device, an unwritable directory, a reader that went away.
 */
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, queryInfo, startEmulator } from '../src/emulator/index.js';
import { ensureBuilt, finishCli, startCli } from './cli-helpers.js';

const KEY = 'local-faults-key-5c1e';
/** A small result (a few hundred rows), read in pages of 50. */
const DATASET = 'store_locations';
const TICKERS = ['nasdaq:aapl', 'lse:tsco'];
const TOTAL = queryInfo(DATASET, { tickers: TICKERS }).total;

let work: string;
let emulator: Emulator;
let n = 0;

async function freshDir(): Promise<string> {
  const dir = join(work, `d${++n}`);
  await mkdir(dir);
  return dir;
}

function conn(emu: Emulator = emulator): string[] {
  return ['--base-url', emu.url, '--api-key', KEY];
}

function queryArgs(out: string, emu?: Emulator): string[] {
  const tickers = TICKERS.flatMap((t) => ['--ticker', t]);
  return ['query', DATASET, ...tickers, '--page-size', '50', '--out', out, ...conn(emu)];
}

function dqs(args: readonly string[], cwd = work) {
  return finishCli(startCli(args, { cwd }));
}

let reference: Buffer;

beforeAll(async () => {
  ensureBuilt();
  work = await mkdtemp(join(tmpdir(), 'dqs-local-'));
  emulator = await startEmulator({ apiKey: KEY });
  const dir = await freshDir();
  const run = await dqs(queryArgs(join(dir, 'ref.csv')));
  expect(run.code, run.stderr).toBe(0);
  reference = await readFile(join(dir, 'ref.csv'));
}, 120_000);

afterAll(async () => {
  await emulator?.close();
  await rm(work, { recursive: true, force: true });
});

describe('dqs query: killed and run again', () => {
  it('kill -9 mid-export, then a re-run: the file is complete and identical, the directory holds nothing else', async () => {
    // Every page takes 100 ms, so the export is surely still running when the kill comes.
    const slow = await startEmulator({
      apiKey: KEY,
      fault: (r) => (r.method === 'GET' && r.query.limit === '50' ? { kind: 'delay', ms: 100 } : undefined),
    });
    try {
      const dir = await freshDir();
      const out = join(dir, 'jobs.csv');
      for (const pages of [1, 3]) {
        const child = startCli(queryArgs(out, slow), { cwd: work });
        const done = finishCli(child);
        const before = slow.requests.length;
        for (let i = 0; i < 400; i++) {
          const answered = slow.requests
            .slice(before)
            .filter((r) => r.query.limit === '50' && r.status === 200);
          if (answered.length >= pages) break;
          await new Promise((r) => setTimeout(r, 10));
        }
        child.kill('SIGKILL');
        expect((await done).signal).toBe('SIGKILL');
        // The killed run's temporary file is there (a SIGKILL runs no cleanup), and no final file.
        expect(await readdir(dir)).toEqual([expect.stringMatching(/^\.jobs\.csv\.\d+-[0-9a-f]{16}\.tmp$/)]);
      }
      const rerun = await dqs(queryArgs(out));
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(await readdir(dir)).toEqual(['jobs.csv']);
      expect((await readFile(out)).equals(reference)).toBe(true);
      expect(parse(reference)).toHaveLength(TOTAL + 1);
    } finally {
      await slow.close();
    }
  });

  it('symlinks planted at the old temporary name and at the target: the victim is untouched', async () => {
    const dir = await freshDir();
    const victim = join(dir, 'victim.txt');
    await writeFile(victim, 'precious');
    const out = join(dir, 'jobs.csv');
    await symlink(victim, out);
    // The old name was FILE.partial-<pid>; plant a range of pids around the next ones.
    const { pid } = process;
    for (let p = pid; p < pid + 50; p++) await symlink(victim, `${out}.partial-${p}`);
    const run = await dqs(queryArgs(out));
    expect(run.code, run.stderr).toBe(0);
    expect(await readFile(victim, 'utf8')).toBe('precious');
    expect((await lstat(out)).isSymbolicLink()).toBe(false);
    expect((await readFile(out)).equals(reference)).toBe(true);
  });
});
