/**
 * The one way this project writes a file (`--out`, `dqs export` partitions, cache entries): the final
 * name only ever holds a complete file, and nothing another local user plants can redirect the bytes.
 *
 * - The bytes go to a temporary file in the target's own directory (same file system, so the rename is
 *   atomic), named `.<name>.<pid>-<16 random hex>.tmp`: hidden (a `*.parquet` glob never matches it) and
 *   unpredictable, so it cannot be planted in advance.
 * - It is created with `O_CREAT | O_EXCL | O_NOFOLLOW`: if anything already exists at that name (a file,
 *   a symlink, even a dangling one) the open fails and another random name is tried; a link is never
 *   followed.
 * - `commit()` flushes the file to disk (fsync), renames it over the target (`rename(2)` replaces a symlink
 *   at the target itself, it never writes through it), then fsyncs the directory so the new name survives
 *   a power loss. Before that, the target's name holds the old file or nothing.
 * - `abort()` closes and removes the temporary file; temporary files still open when the process exits
 *   (a second Ctrl-C) are removed by an exit hook. A SIGKILL leaves one behind: the next `create()` in
 *   that directory removes every such leftover whose process (the pid in its name) is dead, and never one
 *   of a live process, so concurrent runs into one directory do not disturb each other.
 *
 * Errors are Node's own system errors (`code` such as `ENOSPC`, `EACCES`, `EROFS`; `path` set), so a
 * caller can tell a local fault from anything else.
 *
 * @example
 * // A stream pipeline:
 * const file = await SafeFile.create('out/result.csv');
 * try {
 *   await pipeline(source, file.stream);
 *   await file.commit();
 * } catch (err) {
 *   await file.abort();
 *   throw err;
 * }
 * // One buffer:
 * await writeFileSafely('out/entry.bin', bytes, { mode: 0o600 });
 */

import { randomBytes } from 'node:crypto';
import { constants, unlinkSync } from 'node:fs';
import { type FileHandle, lstat, open, readdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Writable } from 'node:stream';

export interface SafeFileOptions {
  /** Permission bits of the new file (before the umask). @default 0o666 */
  readonly mode?: number;
}

// O_NOFOLLOW is absent on Windows (0 there: `wx` alone still refuses an existing name).
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

/** `.<name>.<pid>-<random>.tmp`; the pid says whose it is, for the cleanup of a later run. */
const TEMP_NAME = /^\..+\.(\d+)-[0-9a-f]{16}\.tmp$/;

// A file name is at most 255 bytes on the usual file systems; the suffix takes up to 30.
const MAX_BASE = 200;

// Temporary files open in this process, removed at exit should it end without their cleanup.
const live = new Set<string>();
let exitHookInstalled = false;

function track(path: string): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const p of live) {
        try {
          unlinkSync(p);
        } catch {
          // Already renamed or removed.
        }
      }
    });
  }
  live.add(path);
}

/** The temporary name for `target` (exported for tests and docs). */
export function tempNameFor(target: string): string {
  const base = basename(target);
  const short =
    Buffer.byteLength(base) > MAX_BASE ? Buffer.from(base).subarray(0, MAX_BASE).toString() : base;
  return join(dirname(target), `.${short}.${process.pid}-${randomBytes(8).toString('hex')}.tmp`);
}

/**
 * Opens a new file for writing at `path`, failing with `EEXIST` (or `ELOOP`) if anything is there, a
 * symlink included: the open never follows a link.
 */
export function openExclusive(path: string, mode = 0o666): Promise<FileHandle> {
  return open(path, CREATE_FLAGS, mode);
}

/** Whether a process with this pid exists (EPERM: it does, owned by someone else). */
function isAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the temporary files that dead processes left in `dir` (a run killed with SIGKILL); never one of
 * a live process. Returns how many were removed. Never throws: a directory it cannot read has none to
 * remove that it could.
 */
export async function removeStaleTemps(dir: string): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  let removed = 0;
  await Promise.all(
    names.map(async (name) => {
      const match = TEMP_NAME.exec(name);
      if (!match || isAlive(Number(match[1]))) return;
      // unlink removes a symlink itself, never its target.
      if (
        await unlink(join(dir, name)).then(
          () => true,
          () => false,
        )
      )
        removed++;
    }),
  );
  return removed;
}

/** Writes all of `data` (a write to a regular file may be short). */
async function writeAll(handle: FileHandle, data: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset);
    offset += bytesWritten;
  }
}

/** fsync of a directory, so a rename in it is durable; some platforms refuse it, then it is moot. */
async function syncDirectory(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, constants.O_RDONLY);
    await handle.sync();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EBADF') throw err;
  } finally {
    await handle?.close().catch(() => {});
  }
}

/**
 * One file being written: `create()` → `write()` or `stream` → `commit()`, or `abort()` on any failure.
 * Not reusable; `commit()` and `abort()` each end it.
 */
export class SafeFile {
  /** The final name. */
  readonly path: string;
  /** Where the bytes go until `commit()`. */
  readonly tempPath: string;
  readonly #handle: FileHandle;
  #stream: Writable | undefined;
  #size = 0;
  #state: 'open' | 'committing' | 'done' = 'open';

  private constructor(path: string, tempPath: string, handle: FileHandle) {
    this.path = path;
    this.tempPath = tempPath;
    this.#handle = handle;
  }

  /**
   * Creates the temporary file now, so an unwritable place fails before any work is done. Removes the
   * leftovers of dead processes in the directory first. Fails with `EISDIR` if `path` is a directory.
   */
  static async create(path: string, options: SafeFileOptions = {}): Promise<SafeFile> {
    const existing = await lstat(path).catch(() => undefined);
    if (existing?.isDirectory()) {
      throw Object.assign(new Error(`EISDIR: illegal operation on a directory, open '${path}'`), {
        code: 'EISDIR',
        syscall: 'open',
        path,
      });
    }
    await removeStaleTemps(dirname(path));
    for (let attempt = 0; ; attempt++) {
      const tempPath = tempNameFor(path);
      try {
        const handle = await openExclusive(tempPath, options.mode);
        track(tempPath);
        return new SafeFile(path, tempPath, handle);
      } catch (err) {
        // EEXIST: someone made that name (or a link) first; 2^64 names, so a few tries are plenty.
        // ELOOP: O_NOFOLLOW met a symlink (a platform that checks it before O_EXCL).
        const code = (err as NodeJS.ErrnoException).code;
        if ((code !== 'EEXIST' && code !== 'ELOOP') || attempt >= 4) throw err;
      }
    }
  }

  /** Bytes written so far. */
  get size(): number {
    return this.#size;
  }

  /** Appends bytes (or UTF-8 text). Do not mix with a `stream` still being written. */
  async write(data: Uint8Array | string): Promise<void> {
    if (this.#state !== 'open') throw new Error('SafeFile: write after commit() or abort()');
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    await writeAll(this.#handle, bytes);
    this.#size += bytes.length;
  }

  /**
   * A Writable of the file, for `pipeline(source, file.stream)`. Ending it does not close the file:
   * `commit()` does, after the stream finished.
   */
  get stream(): Writable {
    this.#stream ??= new Writable({
      highWaterMark: 1 << 16,
      write: (chunk: Buffer, _encoding, callback) => {
        this.write(chunk).then(() => callback(), callback);
      },
      writev: (chunks, callback) => {
        const all = Buffer.concat(chunks.map((c) => c.chunk as Buffer));
        this.write(all).then(() => callback(), callback);
      },
    });
    return this.#stream;
  }

  /**
   * Makes the file durable and gives it its final name: fsync, close, rename over `path`, fsync of the
   * directory. Returns the file's size. On failure the temporary file is removed and the error thrown.
   */
  async commit(): Promise<number> {
    if (this.#state !== 'open') throw new Error('SafeFile: commit() after commit() or abort()');
    const stream = this.#stream;
    if (stream && !stream.writableFinished) {
      throw new Error('SafeFile: commit() before its stream finished (await the pipeline first)');
    }
    this.#state = 'committing';
    try {
      await this.#handle.sync();
      await this.#handle.close();
      await rename(this.tempPath, this.path);
    } catch (err) {
      this.#state = 'open';
      await this.abort();
      throw err;
    }
    this.#state = 'done';
    live.delete(this.tempPath);
    await syncDirectory(dirname(this.path));
    return this.#size;
  }

  /** Closes and removes the temporary file. Never throws; nothing to do after `commit()`. */
  async abort(): Promise<void> {
    if (this.#state !== 'open') return;
    this.#state = 'done';
    this.#stream?.destroy();
    await this.#handle.close().catch(() => {});
    await unlink(this.tempPath).catch(() => {});
    live.delete(this.tempPath);
  }
}

/** Writes `data` to `path` through a `SafeFile`: all of it under the final name, or nothing. */
export async function writeFileSafely(
  path: string,
  data: Uint8Array | string,
  options: SafeFileOptions = {},
): Promise<number> {
  const file = await SafeFile.create(path, options);
  try {
    await file.write(data);
    return await file.commit();
  } catch (err) {
    await file.abort();
    throw err;
  }
}
