/** Reading the tickers a command is given: `--ticker`s, then those of `--tickers-file` (a path, or `-` for stdin). */
import { readFile } from 'node:fs/promises';
import { checkTicker } from '../transport/validate.js';
import { list, str, type Values } from './args.js';
import { LocalError, systemReason, UsageError } from './errors.js';
import type { CliIo } from './io.js';

/** `--ticker`s then the `--tickers-file`'s, in order, without repeats. */
export async function readTickers(v: Values, io: CliIo, command: string): Promise<string[]> {
  const tickers = list(v, 'ticker');
  const file = str(v, 'tickers-file');
  if (file !== undefined) {
    let text: string;
    try {
      text = file === '-' ? await readAll(io.stdin) : await readFile(file, 'utf8');
    } catch (err) {
      throw new LocalError(`cannot read --tickers-file ${file}: ${systemReason(err)}`, { cause: err });
    }
    const fromFile = text
      .split(/\r?\n/)
      .flatMap((line) => line.replace(/#.*/, '').split(/[\s,]+/))
      .filter((t) => t.length > 0);
    // An empty list means "no filter" to the service: the whole dataset. Never do that by accident.
    if (fromFile.length === 0) {
      throw new UsageError(
        `--tickers-file ${file} lists no tickers (an empty list would query everything)`,
        command,
      );
    }
    tickers.push(...fromFile);
  }
  return [...new Set(tickers)];
}

/** All of a stream (stdin) as UTF-8 text. */
export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Every ticker shaped `<market>:<identifier>`, checked before anything connects (the embedded emulator
 * starts in a fraction of a second, and says so: not for a typo). One wording for every command: the
 * library names the argument as it saw it (`body.tickers[0]` for a query, `ticker` for the rest), which
 * says nothing to someone who typed `--ticker`.
 */
export function checkTickerArgs(tickers: readonly string[], command: string): void {
  for (const t of tickers) {
    try {
      checkTicker(t);
    } catch {
      const hint = checkTickerShape(t.toLowerCase()) ? ' (tickers are lower case)' : '';
      throw new UsageError(
        `${shown(t)} is not a ticker: expected \`<market>:<identifier>\` such as \`nasdaq:aapl\`${hint}`,
        command,
      );
    }
  }
}

function checkTickerShape(t: string): boolean {
  try {
    checkTicker(t);
    return true;
  } catch {
    return false;
  }
}

/** The value as typed, cut short when long (a ticker is at most 128 characters). */
function shown(t: string): string {
  return t.length > 60 ? `${JSON.stringify(t.slice(0, 60))}… (${t.length} characters)` : JSON.stringify(t);
}
