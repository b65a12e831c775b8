/**
 * The safe file writer (src/core/safe-file.ts) against what another local user, a second run and a
 * SIGKILL can do. Child processes run the built module (dist/), since a SIGKILL must hit a real process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  openExclusive,
  removeStaleTemps,
  SafeFile,
  tempNameFor,
  writeFileSafely,
} from '../src/core/safe-file.js';
import { ensureBuilt, ROOT } from './cli-helpers.js';

const BUILT = join(ROOT, 'dist', 'core', 'safe-file.js');
let work: string;
let n = 0;

async function freshDir(): Promise<string> {
  const dir = join(work, `d${++n}`);
  await mkdir(dir);
  return dir;
}

beforeAll(async () => {
  ensureBuilt(BUILT);
  work = await mkdtemp(join(tmpdir(), 'dqs-safe-file-'));
}, 120_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/**
 * A child that writes `target` through a SafeFile in 64 KiB chunks of byte `fill`, `chunks` of them,
 * printing `open <tempPath>` once the first chunk is written; with `hold`, it then waits forever before
 * committing (to be killed).
 */
function writer(target: string, chunks: number, fill: number, hold: boolean): ChildProcess {
  const script = `
    const { SafeFile } = await import(${JSON.stringify(BUILT)});
    const file = await SafeFile.create(${JSON.stringify(target)});
    const chunk = Buffer.alloc(65536, ${fill});
    for (let i = 0; i < ${chunks}; i++) {
      await file.write(chunk);
      if (i === 0) process.stdout.write('open ' + file.tempPath + '\\n');
      await new Promise((r) => setImmediate(r));
    }
    if (${hold}) await new Promise(() => setInterval(() => {}, 1000));
    await file.commit();
  `;
  return spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

function opened(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (c: Buffer) => {
      text += c.toString();
      const m = /^open (.+)\n/m.exec(text);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`writer exited (${code}) before opening`)));
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

describe('SafeFile: the final name holds a complete file or nothing', () => {
  it('a one-shot write lands under its name and leaves nothing else', async () => {
    const dir = await freshDir();
    const target = join(dir, 'out.bin');
    const bytes = Buffer.from('hello, file\n');
    expect(await writeFileSafely(target, bytes)).toBe(bytes.length);
    expect(await readFile(target)).toEqual(bytes);
    expect(await readdir(dir)).toEqual(['out.bin']);
  });

  it('a stream pipeline lands under its name; the final name does not exist until commit()', async () => {
    const dir = await freshDir();
    const target = join(dir, 'out.csv');
    const file = await SafeFile.create(target);
    const parts = Array.from({ length: 50 }, (_, i) => `row ${i}\n`);
    await pipeline(Readable.from(parts), file.stream);
    expect(existsSync(target)).toBe(false);
    expect((await readdir(dir)).length).toBe(1);
    expect(await file.commit()).toBe(parts.join('').length);
    expect(await readFile(target, 'utf8')).toBe(parts.join(''));
    expect(await readdir(dir)).toEqual(['out.csv']);
  });

  it('abort() removes the temporary file and keeps the old file at the final name', async () => {
    const dir = await freshDir();
    const target = join(dir, 'keep.txt');
    await writeFile(target, 'old');
    const file = await SafeFile.create(target);
    await file.write('new, half');
    await file.abort();
    await file.abort();
    expect(await readFile(target, 'utf8')).toBe('old');
    expect(await readdir(dir)).toEqual(['keep.txt']);
    await expect(file.commit()).rejects.toThrow(/after commit\(\) or abort\(\)/);
  });

  it('a failing source ends in abort(): nothing under the final name', async () => {
    const dir = await freshDir();
    const target = join(dir, 'never.txt');
    const file = await SafeFile.create(target);
    const failing = Readable.from(
      (async function* () {
        yield 'some bytes';
        throw new Error('source broke');
      })(),
    );
    await expect(pipeline(failing, file.stream)).rejects.toThrow('source broke');
    await expect(file.commit()).rejects.toThrow(/before its stream finished|after/);
    await file.abort();
    expect(await readdir(dir)).toEqual([]);
  });

  it('a directory at the target fails with EISDIR before any temporary file is made', async () => {
    const dir = await freshDir();
    await mkdir(join(dir, 'sub'));
    await expect(SafeFile.create(join(dir, 'sub'))).rejects.toMatchObject({ code: 'EISDIR' });
    expect(await readdir(dir)).toEqual(['sub']);
  });

  it('a missing directory fails with ENOENT', async () => {
    await expect(SafeFile.create(join(work, 'nope', 'x'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('SafeFile: links planted by another local user are never followed', () => {
  it('the temporary name is random: two files for one target never share it', async () => {
    const dir = await freshDir();
    const names = new Set(Array.from({ length: 200 }, () => tempNameFor(join(dir, 'x.parquet'))));
    expect(names.size).toBe(200);
    for (const name of names) expect(name).toMatch(/\/\.x\.parquet\.\d+-[0-9a-f]{16}\.tmp$/);
  });

  it.each([
    ['to a victim file', true],
    ['dangling', false],
  ])(
    'the exclusive open refuses a symlink %s at its name and leaves the victim untouched',
    async (_, victimExists) => {
      const dir = await freshDir();
      const victim = join(dir, 'victim.txt');
      if (victimExists) await writeFile(victim, 'precious');
      const planted = join(dir, '.x.tmp');
      await symlink(victim, planted);
      await expect(openExclusive(planted)).rejects.toMatchObject({
        code: expect.stringMatching(/^(EEXIST|ELOOP)$/),
      });
      if (victimExists) expect(await readFile(victim, 'utf8')).toBe('precious');
      else expect(existsSync(victim)).toBe(false);
      expect(await readlink(planted)).toBe(victim);
    },
  );

  it('symlinks at the old predictable names and at the target: the victim is untouched, the target becomes a file', async () => {
    const dir = await freshDir();
    const victim = join(dir, 'victim.txt');
    await writeFile(victim, 'precious');
    const target = join(dir, 'out.csv');
    // The name the CLI used to write to, and the final name itself.
    await symlink(victim, `${target}.partial-${process.pid}`);
    await symlink(victim, target);
    await writeFileSafely(target, 'a,b\n1,2\n');
    expect(await readFile(victim, 'utf8')).toBe('precious');
    expect((await lstat(target)).isSymbolicLink()).toBe(false);
    expect(await readFile(target, 'utf8')).toBe('a,b\n1,2\n');
  });
});

describe('SafeFile: concurrent runs and killed runs', () => {
  it('concurrent writers of one target: the final file is exactly one of them; nothing else is left', async () => {
    const dir = await freshDir();
    const target = join(dir, 'shared.bin');
    const contents = Array.from({ length: 12 }, (_, i) => Buffer.alloc(100_000 + i * 1000, 65 + i));
    await Promise.all(contents.map((c) => writeFileSafely(target, c)));
    const final = await readFile(target);
    expect(contents.some((c) => c.equals(final))).toBe(true);
    expect(await readdir(dir)).toEqual(['shared.bin']);
  });

  it('concurrent processes into one directory keep each other’s temporary files; each completes', async () => {
    const dir = await freshDir();
    const children = [0, 1, 2].map((i) => writer(join(dir, `f${i}.bin`), 8, 97 + i, false));
    const codes = await Promise.all(children.map(exited));
    expect(codes).toEqual([0, 0, 0]);
    expect((await readdir(dir)).sort()).toEqual(['f0.bin', 'f1.bin', 'f2.bin']);
    for (let i = 0; i < 3; i++) {
      expect((await readFile(join(dir, `f${i}.bin`))).equals(Buffer.alloc(8 * 65536, 97 + i))).toBe(true);
    }
  });

  it("the cleanup removes a dead process's temporary file, never a live one's", async () => {
    const dir = await freshDir();
    const child = writer(join(dir, 'held.bin'), 2, 98, true);
    const temp = await opened(child);
    // A run in this directory while the writer lives: its temporary file stays.
    await writeFileSafely(join(dir, 'other.bin'), 'x');
    expect(await removeStaleTemps(dir)).toBe(0);
    expect(existsSync(temp)).toBe(true);
    child.kill('SIGKILL');
    await exited(child);
    expect(existsSync(temp)).toBe(true);
    expect(await removeStaleTemps(dir)).toBe(1);
    expect((await readdir(dir)).sort()).toEqual(['other.bin']);
  });

  it('kill -9 mid-write, then a re-run: the output is complete and the directory holds nothing else', async () => {
    const dir = await freshDir();
    const target = join(dir, 'result.bin');
    const expected = Buffer.alloc(64 * 65536, 99);
    // Killed at different moments after the first chunk; each run removes the one before it left.
    for (const delay of [0, 5, 20]) {
      const child = writer(target, 64, 99, true);
      await opened(child);
      await new Promise((r) => setTimeout(r, delay));
      child.kill('SIGKILL');
      await exited(child);
    }
    expect((await readdir(dir)).filter((f) => f.endsWith('.tmp'))).toHaveLength(1);
    expect(existsSync(target)).toBe(false);
    const rerun = writer(target, 64, 99, false);
    expect(await exited(rerun)).toBe(0);
    expect(await readdir(dir)).toEqual(['result.bin']);
    expect((await readFile(target)).equals(expected)).toBe(true);
  });
});
