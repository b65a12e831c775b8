/** What a command module provides, and what it gets to run with. */
import type { OptionSpecs, ParsedArgs } from './args.js';
import type { Connection } from './connection.js';
import type { ExitCodeValue } from './exit-codes.js';
import type { CliIo } from './io.js';

export type { CliIo } from './io.js';

export interface CommandContext {
  readonly io: CliIo;
  /** Aborted by Ctrl-C / SIGTERM; its reason is an `Interrupted`. */
  readonly signal: AbortSignal;
  readonly quiet: boolean;
  /** A line on stderr, prefixed `dqs: `, unless `--quiet`. */
  info(line: string): void;
  /** A warning on stderr, prefixed `dqs: warning: `, even with `--quiet` (something was left out). */
  warn(line: string): void;
  /** A line on stderr with `--debug` only; masked like everything else. */
  debug(line: string): void;
  /** The service connection (or the embedded emulator), opened on first use and closed after the command. */
  connect(): Promise<Connection>;
}

export interface Command {
  readonly name: string;
  /** One line for `dqs --help`. */
  readonly summary: string;
  /** e.g. `dqs tickers <dataset> <text> [options]` */
  readonly usage: string;
  /** A paragraph or two for `dqs <command> --help`. */
  readonly description: string;
  readonly options: OptionSpecs;
  /** Whether the command talks to the service (and so takes the connection options). */
  readonly connects: boolean;
  readonly examples: readonly string[];
  run(args: ParsedArgs, ctx: CommandContext): Promise<ExitCodeValue>;
}
