/** Errors the CLI itself raises; each knows its exit code. Library errors keep their own `code`. */
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { ExitCode, type ExitCodeValue } from './exit-codes.js';

/** The command line is wrong. The message says what and how to fix it. */
export class UsageError extends Error {
  readonly exitCode: ExitCodeValue = ExitCode.usage;
  /** The command whose `--help` to point to, if any. */
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}

/** A local file or port failed (Node's `code` kept, e.g. `EACCES`). */
export class LocalError extends Error {
  readonly exitCode: ExitCodeValue = ExitCode.local;
  readonly code: string | undefined;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LocalError';
    this.code = (options?.cause as NodeJS.ErrnoException | undefined)?.code;
  }
}

/** Ctrl-C or SIGTERM; the abort reason of the command's signal. */
export class Interrupted extends Error {
  readonly exitCode: ExitCodeValue;
  readonly signal: 'SIGINT' | 'SIGTERM';
  constructor(signal: 'SIGINT' | 'SIGTERM') {
    super(`interrupted (${signal})`);
    this.name = 'Interrupted';
    this.signal = signal;
    this.exitCode = signal === 'SIGINT' ? ExitCode.interrupted : ExitCode.terminated;
  }
}

const REASONS: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a part of the path is not a directory',
  ENOSPC: 'no space left on the device',
  EROFS: 'the file system is read-only',
  EEXIST: 'it already exists',
  EPIPE: 'the reader closed the pipe before all was written',
  EDQUOT: 'the disk quota is exceeded',
  EFBIG: 'the file is larger than allowed (file size limit)',
  EIO: 'an input/output error of the device',
  ELOOP: 'too many symbolic links, or a link where none may be',
  ENAMETOOLONG: 'the name is too long',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files on the system',
  EADDRINUSE: 'the port is already in use',
  EADDRNOTAVAIL: 'the address is not available on this machine',
};

/**
 * What of `path` is missing: the path itself (a file), or the topmost directory above it that does not
 * exist. ENOENT says only "something on the way", and a missing --tickers-file is no missing directory.
 */
function missingPart(path: string): string {
  let missing = path;
  for (let parent = dirname(missing); parent !== missing && !existsSync(parent); parent = dirname(parent)) {
    missing = parent;
  }
  return missing === path ? `${path} does not exist` : `the directory ${missing} does not exist`;
}

/** A short human reason for a Node system error. */
export function systemReason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ENOENT') {
    return `${typeof e.path === 'string' ? missingPart(e.path) : 'no such file or directory'} (ENOENT)`;
  }
  const known = e?.code ? REASONS[e.code] : undefined;
  return known ? `${known} (${e.code})` : String(e?.message ?? err);
}

/**
 * Whether `err` is an operating system error of a local resource (a file, a pipe, a descriptor): Node's
 * errors with a `syscall` and an `E…` code. The library's network failures are `DqsError`s, never these.
 */
export function isSystemError(err: unknown): err is NodeJS.ErrnoException {
  const e = err as NodeJS.ErrnoException | undefined;
  return (
    e instanceof Error &&
    typeof e.code === 'string' &&
    /^E[A-Z0-9]+$/.test(e.code) &&
    (typeof e.syscall === 'string' || typeof e.errno === 'number')
  );
}

/** A `LocalError` for a system error met while writing `where` (a path, or `stdout`); others as they are. */
export function asLocalFault(err: unknown, where: string): unknown {
  if (!isSystemError(err) || err instanceof LocalError) return err;
  return new LocalError(`cannot write ${where}: ${systemReason(err)}`, { cause: err });
}
