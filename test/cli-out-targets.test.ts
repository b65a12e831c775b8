/**
 * `--out` never damages what it names. The safe writer (a temporary file renamed over the target) used to
 * rename over whatever was there: `--out /dev/full` turned the system's /dev/full into a 7.6 MB regular
 * file, and a FIFO's waiting reader hung forever. Now a FIFO, a character device, a socket and a
 * descriptor path are written in place; a symlink to a file, a directory and a block device are refused
 * with one line; `dqs export --out-dir` refuses anything but a directory.
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, createReadStream, openSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../src/cli/exit-codes.js';
import { type Emulator, startEmulator } from '../src/emulator/index.js';
import { cleanEnv, ensureBuilt, finishCli, MAIN, startCli } from './cli-helpers.js';

const KEY = 'out-targets-key-9d2a';
const DATASET = 'store_locations';

let work: string;
let emulator: Emulator;
let reference: Buffer;
let n = 0;

async function freshDir(): Promise<string> {
  const dir = join(work, `d${++n}`);
  await mkdir(dir);
  return dir;
}

function queryArgs(out: string, ...more: string[]): string[] {
  return [
    'query',
    DATASET,
    '--ticker',
    'nasdaq:aapl',
    '--out',
    out,
    '--as',
    'csv',
    '--base-url',
    emulator.url,
    '--api-key',
    KEY,
    '--no-cache',
    ...more,
  ];
}

function dqs(args: readonly string[]) {
  return finishCli(startCli(args, { cwd: work }));
}

/** Runs the CLI with `stdio` beyond stdin (ignored), e.g. its stdout on a file or a descriptor 3. */
function withStdio(args: readonly string[], stdio: (number | 'ignore' | 'pipe')[]) {
  const child = spawn(process.execPath, [MAIN, ...args], {
    cwd: work,
    env: cleanEnv(),
    stdio: ['ignore', ...stdio],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  return new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** mknod needs CAP_MKNOD (root, outside most user namespaces): the device tests need it too. */
function tryMknod(path: string, type: 'c' | 'b', major: number, minor: number): boolean {
  try {
    execFileSync('mknod', [path, type, String(major), String(minor)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

let canMknod = false;

beforeAll(async () => {
  ensureBuilt();
  work = await mkdtemp(join(tmpdir(), 'dqs-out-targets-'));
  emulator = await startEmulator({ apiKey: KEY });
  canMknod = tryMknod(join(work, 'probe'), 'c', 1, 3);
  const out = join(await freshDir(), 'ref.csv');
  const r = await dqs(queryArgs(out));
  expect(r.code, r.stderr).toBe(0);
  reference = await readFile(out);
  expect(reference.length).toBeGreaterThan(1000);
}, 120_000);

afterAll(async () => {
  await emulator?.close();
  await rm(work, { recursive: true, force: true });
});

describe('--out in place: the target keeps its type and gets the bytes', () => {
  it('a FIFO with a reader', async () => {
    const fifo = join(await freshDir(), 'pipe');
    execFileSync('mkfifo', [fifo]);
    // The reader opens first (its open waits for the writer), as `cat pipe` in another shell would.
    const chunks: Buffer[] = [];
    const read = new Promise<void>((resolve, reject) => {
      createReadStream(fifo)
        .on('data', (c) => chunks.push(c as Buffer))
        .on('end', resolve)
        .on('error', reject);
    });
    const r = await dqs(queryArgs(fifo));
    await read;
    expect(r.code, r.stderr).toBe(0);
    expect(Buffer.concat(chunks).equals(reference)).toBe(true);
    expect((await lstat(fifo)).isFIFO()).toBe(true);
    expect(r.stderr).toMatch(/wrote \d+ rows to .*pipe \(CSV/);
  });

  it('/dev/stdout, when stdout is a pipe and when it is a file the shell opened', async () => {
    const piped = await dqs(queryArgs('/dev/stdout'));
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout.equals(reference)).toBe(true);

    const file = join(await freshDir(), 'redirected.csv');
    const fd = openSync(file, 'w');
    try {
      const r = await withStdio(queryArgs('/dev/stdout'), [fd, 'pipe']);
      expect(r.code, r.stderr).toBe(0);
    } finally {
      closeSync(fd);
    }
    // The shell's file got the bytes (a rename over /dev/stdout's target would have left it empty).
    expect((await readFile(file)).equals(reference)).toBe(true);
    expect((await lstat(file)).isFile()).toBe(true);
  });

  it('/dev/fd/N: a descriptor opened for appending (`3>> FILE`) is appended to', async () => {
    const file = join(await freshDir(), 'appended.csv');
    await writeFile(file, 'before\n');
    const fd = openSync(file, 'a');
    try {
      const { code, stderr } = await withStdio(queryArgs('/dev/fd/3'), ['ignore', 'pipe', fd]);
      expect(code, stderr).toBe(0);
    } finally {
      closeSync(fd);
    }
    expect((await readFile(file)).equals(Buffer.concat([Buffer.from('before\n'), reference]))).toBe(true);
  });

  it('a Unix domain socket gets the bytes over a connection', async () => {
    const path = join(await freshDir(), 'sock');
    const chunks: Buffer[] = [];
    let done!: () => void;
    const received = new Promise<void>((resolve) => {
      done = resolve;
    });
    const server: Server = createServer((conn) => {
      conn.on('data', (c: Buffer) => chunks.push(c)).on('end', done);
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      const r = await dqs(queryArgs(path));
      await received;
      expect(r.code, r.stderr).toBe(0);
      expect(Buffer.concat(chunks).equals(reference)).toBe(true);
      expect((await lstat(path)).isSocket()).toBe(true);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a private copy of /dev/null made with mknod (skipped where mknod is not permitted)', async (ctx) => {
    if (!canMknod) ctx.skip();
    const dev = join(await freshDir(), 'null');
    expect(tryMknod(dev, 'c', 1, 3)).toBe(true);
    const r = await dqs(queryArgs(dev));
    expect(r.code, r.stderr).toBe(0);
    const after = await lstat(dev);
    expect(after.isCharacterDevice()).toBe(true);
    expect(after.rdev).toBe((await stat('/dev/null')).rdev);
    expect(r.stderr).toMatch(/wrote \d+ rows to .*null \(CSV/);
    expect(await readdir(join(dev, '..'))).toEqual(['null']);
  });

  it('a private copy of /dev/full: exit 7 with ENOSPC, and it stays a device (skipped without mknod)', async (ctx) => {
    if (!canMknod) ctx.skip();
    const dev = join(await freshDir(), 'full');
    expect(tryMknod(dev, 'c', 1, 7)).toBe(true);
    const r = await dqs(queryArgs(dev));
    expect(r.code, r.stderr).toBe(ExitCode.local);
    expect(r.stderr).toMatch(/cannot write .*full: no space left on the device \(ENOSPC\)/);
    expect((await lstat(dev)).isCharacterDevice()).toBe(true);
    expect(await readdir(join(dev, '..'))).toEqual(['full']);
  });
});

describe('--out refused with one line, exit 7, before any request; nothing changed', () => {
  const oneLine = (stderr: string) => {
    expect(stderr.trim().split('\n')).toHaveLength(1);
  };

  it('a symlink to a regular file: the link and its file stay as they are', async () => {
    const dir = await freshDir();
    await writeFile(join(dir, 'victim.txt'), 'precious');
    await symlink('victim.txt', join(dir, 'out.csv'));
    const before = emulator.requests.length;
    const r = await dqs(queryArgs(join(dir, 'out.csv')));
    expect(r.code, r.stderr).toBe(ExitCode.local);
    oneLine(r.stderr);
    expect(r.stderr).toMatch(
      /cannot create .*out\.csv: it is a symbolic link to a regular file; .*give the file's own path \(victim\.txt\)/,
    );
    expect(emulator.requests.length).toBe(before);
    expect(await readFile(join(dir, 'victim.txt'), 'utf8')).toBe('precious');
    expect((await lstat(join(dir, 'out.csv'))).isSymbolicLink()).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(['out.csv', 'victim.txt']);
  });

  it('a dangling symlink: refused, not created through', async () => {
    const dir = await freshDir();
    await symlink('elsewhere.csv', join(dir, 'out.csv'));
    const r = await dqs(queryArgs(join(dir, 'out.csv')));
    expect(r.code, r.stderr).toBe(ExitCode.local);
    oneLine(r.stderr);
    expect(r.stderr).toMatch(/it is a dangling symbolic link/);
    expect(await readdir(dir)).toEqual(['out.csv']);
  });

  it('a directory', async () => {
    const dir = await freshDir();
    const r = await dqs(queryArgs(dir));
    expect(r.code, r.stderr).toBe(ExitCode.local);
    oneLine(r.stderr);
    expect(r.stderr).toMatch(/it is a directory; give a file name in it/);
  });

  it('a block device (a mknod copy of loop0; skipped without mknod)', async (ctx) => {
    if (!canMknod) ctx.skip();
    const dev = join(await freshDir(), 'disk');
    expect(tryMknod(dev, 'b', 7, 0)).toBe(true);
    const r = await dqs(queryArgs(dev));
    expect(r.code, r.stderr).toBe(ExitCode.local);
    oneLine(r.stderr);
    expect(r.stderr).toMatch(/it is a block device/);
    expect((await lstat(dev)).isBlockDevice()).toBe(true);
  });
});

describe('dqs export --out-dir: a directory (or a link to one), or refused', () => {
  const exportArgs = (dir: string) => [
    'export',
    DATASET,
    '--ticker',
    'nasdaq:aapl',
    '--out-dir',
    dir,
    '--base-url',
    emulator.url,
    '--api-key',
    KEY,
    '--no-cache',
  ];

  it('a regular file or a FIFO at --out-dir: exit 7 naming what is there, left as it was', async () => {
    const dir = await freshDir();
    await writeFile(join(dir, 'lake'), 'x');
    execFileSync('mkfifo', [join(dir, 'pipe')]);
    const file = await dqs(exportArgs(join(dir, 'lake')));
    expect(file.code, file.stderr).toBe(ExitCode.local);
    expect(file.stderr).toMatch(/--out-dir .*lake: it is a regular file, not a directory/);
    const fifo = await dqs(exportArgs(join(dir, 'pipe')));
    expect(fifo.code, fifo.stderr).toBe(ExitCode.local);
    expect(fifo.stderr).toMatch(/--out-dir .*pipe: it is a FIFO \(named pipe\), not a directory/);
    expect(await readFile(join(dir, 'lake'), 'utf8')).toBe('x');
    expect((await lstat(join(dir, 'pipe'))).isFIFO()).toBe(true);
  });

  it('a symlink to a directory is followed: the partitions land in the linked directory', async () => {
    const dir = await freshDir();
    await mkdir(join(dir, 'real'));
    await symlink('real', join(dir, 'lake'));
    const r = await dqs(exportArgs(join(dir, 'lake')));
    expect(r.code, r.stderr).toBe(0);
    expect((await lstat(join(dir, 'lake'))).isSymbolicLink()).toBe(true);
    expect(await readdir(join(dir, 'real'))).toEqual([`dataset=${DATASET}`]);
  });
});
