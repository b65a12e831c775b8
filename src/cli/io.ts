/**
 * The process's streams and environment as a command sees them (tests pass their own). A module of its
 * own so that command.ts, connection.ts and tickers.ts can all name it without importing each other.
 */
export interface CliIo {
  readonly stdout: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
  readonly stdin: NodeJS.ReadStream;
  readonly env: NodeJS.ProcessEnv;
}
