/**
 * Writing a file so that its final name only ever holds a complete file: the bytes go to
 * `FILE.partial-<pid>` in the same directory (same file system, so the rename is atomic), renamed to
 * `FILE` on success, removed on failure or interruption, and removed at process exit if still there
 * (a second Ctrl-C exits without waiting for cleanup).
 */
import { unlinkSync, type WriteStream } from 'node:fs';
import { open, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { LocalError, systemReason } from './errors.js';

const live = new Set<string>();
let exitHookInstalled = false;

function removeLiveOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const path of live) {
      try {
        unlinkSync(path);
      } catch {
        // Already gone, or not ours to remove any more.
      }
    }
  });
}

export class AtomicFile {
  readonly path: string;
  readonly tempPath: string;
  readonly stream: WriteStream;
  #done = false;

  private constructor(path: string, tempPath: string, stream: WriteStream) {
    this.path = path;
    this.tempPath = tempPath;
    this.stream = stream;
  }

  /** Creates the temporary file now, so a bad path fails before any request is made. */
  static async create(path: string): Promise<AtomicFile> {
    const existing = await stat(path).catch(() => undefined);
    if (existing?.isDirectory()) throw new LocalError(`cannot write ${path}: it is a directory`);
    const tempPath = join(dirname(path), `${basename(path)}.partial-${process.pid}`);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      // 'w', not 'wx': a leftover of a killed run with the same pid is ours to overwrite.
      handle = await open(tempPath, 'w');
    } catch (err) {
      throw new LocalError(`cannot create ${tempPath}: ${systemReason(err)}`, { cause: err });
    }
    removeLiveOnExit();
    live.add(tempPath);
    const stream = handle.createWriteStream();
    return new AtomicFile(path, tempPath, stream);
  }

  /** Renames the finished temporary file to its final name; returns the file's size. */
  async commit(): Promise<number> {
    if (this.#done) throw new Error('AtomicFile already committed or discarded');
    try {
      await rename(this.tempPath, this.path);
    } catch (err) {
      throw new LocalError(`cannot rename ${this.tempPath} to ${this.path}: ${systemReason(err)}`, {
        cause: err,
      });
    }
    this.#done = true;
    live.delete(this.tempPath);
    return (await stat(this.path)).size;
  }

  /** Closes and removes the temporary file; never throws. */
  async discard(): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    if (!this.stream.closed) {
      await new Promise<void>((resolve) => {
        this.stream.once('close', () => resolve());
        this.stream.destroy();
      });
    }
    await unlink(this.tempPath).catch(() => {});
    live.delete(this.tempPath);
  }
}
