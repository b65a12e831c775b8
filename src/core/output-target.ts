/**
 * Where `dqs query --out PATH` writes, chosen by what is at PATH, so that a write never damages what it
 * writes to:
 *
 * - nothing, or a regular file: a `SafeFile` (temporary file beside it, renamed over it when complete);
 * - a FIFO, a character device (`/dev/null`, a terminal) or a socket, also through symlinks: written in
 *   place, as every Unix tool does. Renaming a temporary file over `/dev/null` would replace the device
 *   with a regular file, and a FIFO's reader would wait forever;
 * - a descriptor path (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`): that descriptor,
 *   whatever it is open on (a pipe, a terminal, a file the shell opened with `>` or `>>`);
 * - a symlink to a regular file or to nothing: refused. Following it would let a link planted in a shared
 *   directory redirect the bytes to another file; replacing it silently would break what the link was
 *   for. The file's own path works;
 * - a directory, a block device: refused.
 *
 * Every refusal is an `OutputRefusedError` that says what is there; system errors stay Node's own.
 */
import { constants, type Stats, write } from 'node:fs';
import { type FileHandle, lstat, open, readlink, stat } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { SafeFile } from './safe-file.js';

/** A place being written: bytes into `stream`, then `commit()`, or `abort()` on any failure. */
export interface OutputTarget {
  /** The path as given. */
  readonly path: string;
  readonly stream: Writable;
  /** Ends the write and returns the bytes written. Call after the stream finished. */
  commit(): Promise<number>;
  /** Stops the write; never throws. A temporary file is removed; bytes written in place stay written. */
  abort(): Promise<void>;
}

/** What is at a path, as the refusals name it. */
export type OutputKind =
  | 'directory'
  | 'block device'
  | 'symbolic link to a regular file'
  | 'dangling symbolic link';

/** `--out` names something that must not be written to (or replaced). */
export class OutputRefusedError extends Error {
  readonly path: string;
  readonly kind: OutputKind;
  constructor(path: string, kind: OutputKind, advice: string) {
    super(`it is a ${kind}; ${advice}`);
    this.name = 'OutputRefusedError';
    this.path = path;
    this.kind = kind;
  }
}

/** What a `stat` found, in words: `FIFO`, `block device`, ... */
export function kindOf(what: Stats): string {
  if (what.isFile()) return 'regular file';
  if (what.isDirectory()) return 'directory';
  if (what.isFIFO()) return 'FIFO (named pipe)';
  if (what.isCharacterDevice()) return 'character device';
  if (what.isBlockDevice()) return 'block device';
  if (what.isSocket()) return 'socket';
  if (what.isSymbolicLink()) return 'symbolic link';
  return 'special file';
}

/** `/dev/stdout` and friends: the descriptor they stand for, or undefined. */
export function descriptorOf(path: string): number | undefined {
  if (path === '/dev/stdout') return 1;
  if (path === '/dev/stderr') return 2;
  const m = /^\/(?:dev\/fd|proc\/self\/fd)\/(\d+)$/.exec(path);
  return m ? Number(m[1]) : undefined;
}

/** Opens the place `path` names for writing, by the rules above. */
export async function openOutputTarget(path: string): Promise<OutputTarget> {
  const fd = descriptorOf(path);
  if (fd !== undefined && process.platform !== 'win32') return new DescriptorTarget(path, fd);
  const link = await lstat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (link === undefined || link.isFile()) return SafeFile.create(path);
  // A symlink is judged by what it points to; stat follows it (and every link after it).
  const what = link.isSymbolicLink()
    ? await stat(path).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined;
        throw err;
      })
    : link;
  if (what === undefined || what.isFile()) {
    const to = await readlink(path).catch(() => '?');
    throw new OutputRefusedError(
      path,
      what === undefined ? 'dangling symbolic link' : 'symbolic link to a regular file',
      `dqs does not write through a link to a file (nor replace the link): give the file's own path (${to})`,
    );
  }
  if (what.isDirectory()) {
    throw new OutputRefusedError(path, 'directory', 'give a file name in it, e.g. --out DIR/result.parquet');
  }
  if (what.isBlockDevice()) {
    throw new OutputRefusedError(path, 'block device', 'write to a file on a file system instead');
  }
  if (what.isSocket()) return SocketTarget.open(path);
  // A FIFO waits here for its reader, as `cat > fifo` does; a character device opens at once.
  const handle = await open(path, constants.O_WRONLY | (constants.O_NOCTTY ?? 0));
  return new HandleTarget(path, handle);
}

/** Counts the bytes and hands them to `write`; the shared part of the in-place targets. */
abstract class InPlaceTarget implements OutputTarget {
  readonly path: string;
  #size = 0;
  #stream: Writable | undefined;

  constructor(path: string) {
    this.path = path;
  }

  protected abstract writeBytes(data: Uint8Array): Promise<void>;
  protected abstract close(): Promise<void>;

  get stream(): Writable {
    this.#stream ??= new Writable({
      highWaterMark: 1 << 16,
      write: (chunk: Buffer, _encoding, callback) => {
        this.writeBytes(chunk).then(() => {
          this.#size += chunk.length;
          callback();
        }, callback);
      },
      final: (callback) => {
        callback();
      },
    });
    return this.#stream;
  }

  async commit(): Promise<number> {
    await this.close();
    return this.#size;
  }

  async abort(): Promise<void> {
    this.#stream?.destroy();
    await this.close().catch(() => {});
  }
}

/** A FIFO or a character device, opened by its path. */
class HandleTarget extends InPlaceTarget {
  readonly #handle: FileHandle;
  #closed = false;
  constructor(path: string, handle: FileHandle) {
    super(path);
    this.#handle = handle;
  }
  protected async writeBytes(data: Uint8Array): Promise<void> {
    // A pipe takes a large write in parts.
    for (let offset = 0; offset < data.length; ) {
      offset += (await this.#handle.write(data, offset, data.length - offset)).bytesWritten;
    }
  }
  protected async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#handle.close();
  }
}

/**
 * A descriptor this process already has (`/dev/fd/3` with `3> out.csv`): written through a second
 * descriptor of the same open file (`dup` semantics, as shells treat these names), never closed by us.
 * Reopening `/proc/self/fd/N` instead would fail on a socket and start at offset 0 of a file opened with
 * `>>`.
 */
class DescriptorTarget extends InPlaceTarget {
  readonly #fd: number;
  constructor(path: string, fd: number) {
    super(path);
    this.#fd = fd;
  }
  protected async writeBytes(data: Uint8Array): Promise<void> {
    for (let offset = 0; offset < data.length; ) {
      offset += await new Promise<number>((resolve, reject) =>
        write(this.#fd, data, offset, data.length - offset, null, (err, n) => {
          // A descriptor in non-blocking mode (a pipe someone else set so): wait for room, then again.
          if (err?.code === 'EAGAIN') setTimeout(() => resolve(0), 5);
          else if (err) reject(err);
          else resolve(n);
        }),
      );
    }
  }
  protected async close(): Promise<void> {
    // The descriptor belongs to whoever opened it (the shell): it stays open.
  }
}

/** A Unix domain socket file: `open(2)` refuses those (ENXIO); a stream client connects instead. */
class SocketTarget extends InPlaceTarget {
  readonly #socket: ReturnType<typeof createConnection>;
  constructor(path: string, socket: ReturnType<typeof createConnection>) {
    super(path);
    this.#socket = socket;
  }
  static async open(path: string): Promise<SocketTarget> {
    const socket = createConnection({ path });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new SocketTarget(path, socket);
  }
  protected writeBytes(data: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#socket.write(data, (err) => (err ? reject(err) : resolve()));
    });
  }
  protected async close(): Promise<void> {
    if (this.#socket.destroyed) return;
    this.#socket.end();
    await finished(this.#socket).catch(() => {});
  }
}
