/**
 * The built `dqs` on a shared machine and in a full or closed place: killed with SIGKILL and run again,
 * links planted by another local user, a full device, an unwritable directory, a reader that went away.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSystemError } from '../src/cli/errors.js';
import { ExitCode } from '../src/cli/exit-codes.js';
import { report } from '../src/cli/report.js';
import { type Emulator, queryInfo, startEmulator } from '../src/emulator/index.js';
import { cleanEnv, ensureBuilt, finishCli, MAIN, startCli } from './cli-helpers.js';

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

/** One line on stderr and no stack trace. */
function expectOneLine(stderr: string): void {
  expect(stderr.trim().split('\n')).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
}

interface Spawned {
  code: number | null;
  stderr: string;
}

/**
 * Runs the built CLI with `stdout` going to a file descriptor (e.g. /dev/full), through `sh -c` with a
 * prefix (e.g. `ulimit -f 16;`), or as another user.
 */
function run(
  args: readonly string[],
  options: { stdoutFd?: number; shellPrefix?: string; uid?: number } = {},
): Promise<Spawned> {
  const argv = [process.execPath, MAIN, ...args];
  const quoted = argv.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const [file, fileArgs] = options.shellPrefix
    ? ['/bin/sh', ['-c', `${options.shellPrefix} exec ${quoted}`]]
    : [process.execPath, argv.slice(1)];
  const child = spawn(file as string, fileArgs as string[], {
    cwd: work,
    env: cleanEnv(),
    stdio: ['ignore', options.stdoutFd ?? 'ignore', 'pipe'],
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.uid } : {}),
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
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

  it('symlinks planted at the old temporary name and at the target: refused, the victim and the link untouched', async () => {
    const dir = await freshDir();
    const victim = join(dir, 'victim.txt');
    await writeFile(victim, 'precious');
    const out = join(dir, 'jobs.csv');
    await symlink(victim, out);
    // The old name was FILE.partial-<pid>; plant a range of pids around the next ones.
    const { pid } = process;
    for (let p = pid; p < pid + 50; p++) await symlink(victim, `${out}.partial-${p}`);
    const run = await dqs(queryArgs(out));
    // A link at --out is neither written through nor replaced (test/cli-out-targets.test.ts).
    expect(run.code, run.stderr).toBe(ExitCode.local);
    expectOneLine(run.stderr);
    expect(await readFile(victim, 'utf8')).toBe('precious');
    expect((await lstat(out)).isSymbolicLink()).toBe(true);
  });
});

describe.concurrent('local faults are exit 7 with one line', () => {
  it.each([
    ['dqs query --out - (CSV)', () => queryArgs('-').concat(['--as', 'csv'])],
    ['dqs query --out - (Arrow)', () => queryArgs('-')],
    ['dqs datasets', () => ['datasets', ...conn()]],
    ['dqs tickers --json', () => ['tickers', DATASET, 'a', '--json', ...conn()]],
  ])('stdout on a full device (/dev/full): %s', async (_, args) => {
    const fd = openSync('/dev/full', 'w');
    try {
      const r = await run(args(), { stdoutFd: fd });
      expect(r.code, r.stderr).toBe(ExitCode.local);
      expectOneLine(r.stderr);
      expect(r.stderr).toMatch(/cannot write stdout: no space left on the device \(ENOSPC\)/);
    } finally {
      closeSync(fd);
    }
  });

  it('stdout closed by its reader mid-export (EPIPE): exit 7, one line', async () => {
    // --no-cache: a hit from an earlier test of this file writes its 67 kB at once, which the pipe's
    // buffer may take whole before the reader closes; pages of 50 rows from the service keep writing.
    const child = startCli(queryArgs('-').concat(['--as', 'csv', '--no-cache']), { cwd: work });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.stdout!.once('data', () => child.stdout!.destroy());
    child.stdin!.end();
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect(code, stderr).toBe(ExitCode.local);
    expectOneLine(stderr);
    expect(stderr).toMatch(
      /cannot write stdout: the reader closed the pipe before all was written \(EPIPE\)/,
    );
  });

  it('--out FILE that cannot grow (a file size limit: the write fails mid-export): exit 7, nothing left', async () => {
    const dir = await freshDir();
    // ulimit -f counts 512-byte blocks (POSIX sh): 16 KiB, far less than the export.
    const r = await run(queryArgs(join(dir, 'big.csv')), { shellPrefix: 'ulimit -f 32;' });
    expect(r.code, r.stderr).toBe(ExitCode.local);
    expectOneLine(r.stderr);
    expect(r.stderr).toMatch(/cannot write .*big\.csv: the file is larger than allowed .*\(EFBIG\)/);
    expect(await readdir(dir)).toEqual([]);
  });

  it('--out FILE in a directory without write permission (EACCES): exit 7 before any request', async () => {
    const dir = await freshDir();
    await chmod(work, 0o755);
    await chmod(dir, 0o555);
    // An emulator of its own: the shared one may still log requests of the test before (a CLI that
    // failed mid-export with pages in flight), which would count here under load.
    const own = await startEmulator({ apiKey: KEY });
    // root ignores permission bits: run as nobody then.
    const uid = process.getuid?.() === 0 ? 65534 : undefined;
    const r = await run(queryArgs(join(dir, 'x.parquet'), own), uid === undefined ? {} : { uid }).finally(
      () => own.close(),
    );
    expect(r.code, r.stderr).toBe(ExitCode.local);
    expectOneLine(r.stderr);
    expect(r.stderr).toMatch(/cannot create .*x\.parquet: permission denied \(EACCES\)/);
    expect(own.requests.length).toBe(0);
    expect(await readdir(dir)).toEqual([]);
  });

  it.each(['ENOSPC', 'EPIPE', 'EACCES', 'EROFS', 'EDQUOT', 'EIO'])(
    'a %s no command wrapped is still exit 7 with one line naming it',
    (code) => {
      const err = Object.assign(new Error(`${code}: failed, write`), {
        code,
        syscall: 'write',
        path: '/x/y',
      });
      expect(isSystemError(err)).toBe(true);
      const r = report(err, { command: 'query', secrets: [] });
      expect(r.exitCode).toBe(ExitCode.local);
      expect(r.line).toMatch(new RegExp(`^dqs query: /x/y: .*\\(${code}\\)\\.$`));
    },
  );
});
