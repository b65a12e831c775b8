/** Errors the CLI itself raises; each knows its exit code. Library errors keep their own `code`. */
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
  ENOENT: 'the directory does not exist',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a part of the path is not a directory',
  ENOSPC: 'no space left on the device',
  EROFS: 'the file system is read-only',
  EEXIST: 'it already exists',
  EADDRINUSE: 'the port is already in use',
  EADDRNOTAVAIL: 'the address is not available on this machine',
};

/** A short human reason for a Node system error. */
export function systemReason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const known = e?.code ? REASONS[e.code] : undefined;
  return known ? `${known} (${e.code})` : String(e?.message ?? err);
}
