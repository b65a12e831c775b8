/** `dqs serve`: runs the emulator (synthetic data, the real wire protocol) until Ctrl-C. */
import { readFile } from 'node:fs/promises';
import { flag, int, JSON_OPTION, positionals, str, type Values } from '../args.js';
import type { Command } from '../command.js';
import { LocalError, systemReason, UsageError } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { printJson } from '../print.js';

export const serveCommand: Command = {
  name: 'serve',
  summary: 'Run the emulator: a local Dataset Query Service with synthetic data.',
  usage: 'dqs serve [--port N] [--api-key KEY] [options]',
  description:
    'Runs the emulator until Ctrl-C (exit code 0). It prints its address on stdout (with --json: {"url", "port"}),\n' +
    'so other shells and tools can point DQS_BASE_URL at it. The key is not printed when you chose it.',
  options: {
    port: { type: 'string', arg: 'N', help: 'TCP port; 0 picks a free one (default 8080).' },
    host: { type: 'string', arg: 'HOST', help: 'Interface to listen on (default 127.0.0.1).' },
    'api-key': { type: 'string', arg: 'KEY', help: 'The key clients must send (default "demo").' },
    'row-cap': {
      type: 'string',
      arg: 'N',
      help: 'Rows per query result before truncation (default 500000).',
    },
    seed: { type: 'string', arg: 'N', help: 'Seed of the synthetic data (default 1): same seed, same rows.' },
    'query-delay-ms': { type: 'string', arg: 'MS', help: 'How long a new query stays running (default 0).' },
    'max-page-size': {
      type: 'string',
      arg: 'N',
      help: 'Largest page served; larger limits are clamped (default 100000).',
    },
    'no-compression': {
      type: 'boolean',
      help: 'Send every body as it is, whatever Accept-Encoding asks (default: gzip/br/deflate JSON and CSV).',
    },
    'compression-level': {
      type: 'string',
      arg: 'N',
      help: 'Compression level 1-9 of gzip, deflate and brotli (default 1, as nginx).',
    },
    'latency-ms': {
      type: 'string',
      arg: 'MS',
      help: 'Round-trip time added before every first byte, twice on a new connection (default 0).',
    },
    'page-time-ms': {
      type: 'string',
      arg: 'MS',
      help: 'Execution time of each result page before its first byte (default 0).',
    },
    'row-time-ms': {
      type: 'string',
      arg: 'MS',
      help: 'More execution time per row of a page, e.g. 0.02 (default 0).',
    },
    'connection-bandwidth': {
      type: 'string',
      arg: 'RATE',
      help: 'Bytes per second of each connection, e.g. 25MB or 100Mbit (default unlimited).',
    },
    'total-bandwidth': {
      type: 'string',
      arg: 'RATE',
      help: 'Bytes per second shared by all connections, e.g. 100MB (default unlimited).',
    },
    'max-in-flight': {
      type: 'string',
      arg: 'N',
      help: 'Requests handled at once; more are answered 429 with Retry-After (default no cap).',
    },
    'requests-per-minute': {
      type: 'string',
      arg: 'N',
      help: 'Requests admitted per sliding minute; more are answered 429 with Retry-After (default no limit).',
    },
    'tls-cert': {
      type: 'string',
      arg: 'FILE',
      help: 'Serve HTTPS with this certificate (PEM; with --tls-key), e.g. to try a company CA setup.',
    },
    'tls-key': { type: 'string', arg: 'FILE', help: 'The private key (PEM) of --tls-cert.' },
    ...JSON_OPTION,
  },
  connects: false,
  examples: ['dqs serve --port 8080', 'DQS_BASE_URL=http://127.0.0.1:8080 DQS_API_KEY=demo dqs datasets'],
  async run(args, ctx) {
    positionals('serve', args, []);
    const v = args.values;
    const options = {
      port: int('serve', v, 'port', 0, 65535) ?? 8080,
      host: str(v, 'host') ?? '127.0.0.1',
      ...optional('apiKey', str(v, 'api-key')),
      ...optional('rowCap', int('serve', v, 'row-cap', 1)),
      ...optional('seed', int('serve', v, 'seed', 0, 0xffffffff)),
      ...optional('queryDelayMs', int('serve', v, 'query-delay-ms', 0)),
      ...optional('maxPageSize', int('serve', v, 'max-page-size', 1)),
      ...compressionOption(v),
      ...optional('latencyMs', milliseconds(v, 'latency-ms')),
      ...optional('pageTimeMs', milliseconds(v, 'page-time-ms')),
      ...optional('rowTimeMs', milliseconds(v, 'row-time-ms')),
      ...optional('connectionBytesPerSecond', rate(v, 'connection-bandwidth')),
      ...optional('totalBytesPerSecond', rate(v, 'total-bandwidth')),
      ...optional('maxInFlight', int('serve', v, 'max-in-flight', 0)),
      ...optional('requestsPerMinute', int('serve', v, 'requests-per-minute', 0)),
    };
    const tls = await tlsOption(v);
    if (tls) Object.assign(options, { tls });
    const { startEmulator } = await import('../../emulator/index.js');
    let emulator: Awaited<ReturnType<typeof startEmulator>>;
    try {
      emulator = await startEmulator(options);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code?.startsWith('EADDR')) {
        throw new LocalError(
          `cannot listen on ${options.host}:${options.port}: ${systemReason(err)}; pick another --port (0 picks a free one)`,
          { cause: err },
        );
      }
      throw err;
    }
    try {
      if (flag(v, 'json')) printJson(ctx.io.stdout, { url: emulator.url, port: emulator.port });
      else ctx.io.stdout.write(`${emulator.url}\n`);
      const key =
        str(v, 'api-key') === undefined ? `DQS_API_KEY=${emulator.apiKey}` : 'DQS_API_KEY=<your --api-key>';
      ctx.info(`emulator listening; in another shell: DQS_BASE_URL=${emulator.url} ${key} dqs datasets`);
      ctx.info('press Ctrl-C to stop');
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      ctx.info('emulator stopped');
      return ExitCode.ok;
    } finally {
      await emulator.close();
    }
  },
};

function milliseconds(v: Values, name: string): number | undefined {
  const raw = str(v, name);
  if (raw === undefined) return undefined;
  const n = /^\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isFinite(n) || n > 2_147_483_647) {
    throw new UsageError(
      `Expected --${name} to be a number of milliseconds >= 0, got ${JSON.stringify(raw)}`,
      'serve',
    );
  }
  return n;
}

const UNITS: Record<string, number> = { '': 1, k: 1e3, K: 1e3, M: 1e6, G: 1e9 };

/** Bytes per second from `25000000`, `25MB`, `25M/s`, `100Mbit` (decimal units; `bit` divides by 8). */
function rate(v: Values, name: string): number | undefined {
  const raw = str(v, name);
  if (raw === undefined) return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kKMG]?)(B|bit|b)?(?:\/s|ps)?\s*$/.exec(raw);
  const bytes = m ? (Number(m[1]) * UNITS[m[2]!]!) / (m[3] === 'bit' || m[3] === 'b' ? 8 : 1) : Number.NaN;
  if (!Number.isFinite(bytes) || bytes < 1 || bytes > Number.MAX_SAFE_INTEGER) {
    throw new UsageError(
      `Expected --${name} to be a rate such as 25MB, 100Mbit or 1000000 (bytes per second), got ${JSON.stringify(raw)}`,
      'serve',
    );
  }
  return Math.round(bytes);
}

function compressionOption(v: Values): { compression?: false | { level: number } } {
  const level = int('serve', v, 'compression-level', 1, 9);
  if (flag(v, 'no-compression')) {
    if (level !== undefined)
      throw new UsageError('--compression-level makes no sense with --no-compression', 'serve');
    return { compression: false };
  }
  return level === undefined ? {} : { compression: { level } };
}

/** `{ [key]: value }` only when defined (exactOptionalPropertyTypes forbids explicit undefined). */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return value === undefined ? {} : ({ [key]: value } as { [P in K]?: V });
}

/** `--tls-cert FILE --tls-key FILE`: both or neither, each read here so a missing file names its flag. */
async function tlsOption(v: Values): Promise<{ cert: string; key: string } | undefined> {
  const certFile = str(v, 'tls-cert');
  const keyFile = str(v, 'tls-key');
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined) {
    throw new UsageError('--tls-cert and --tls-key go together', 'serve');
  }
  const read = async (flagName: string, file: string) => {
    try {
      return await readFile(file, 'utf8');
    } catch (err) {
      throw new LocalError(`cannot read --${flagName} ${file}: ${systemReason(err)}`, { cause: err });
    }
  };
  return { cert: await read('tls-cert', certFile), key: await read('tls-key', keyFile) };
}
