/**
 * Where the CLI's requests go. Flags beat the environment, and with no address at all the command starts
 * the embedded emulator in this process and says so on stderr: that is what makes the README's first
 * command work on a fresh clone, with no account and no server.
 */
import { readFile } from 'node:fs/promises';
import { defaultCacheDir } from '../cache/options.js';
import type { DatasetClient } from '../client.js';
import type { OptionSpecs, Values } from './args.js';
import { flag, int, str } from './args.js';
import { LocalError, systemReason, UsageError } from './errors.js';
import type { CliIo } from './io.js';
import { readAll } from './tickers.js';

/** Options of the commands that read results (`query`, `export`): the result cache is on by default. */
export const CACHE_OPTIONS: OptionSpecs = {
  'no-cache': {
    type: 'boolean',
    help: 'Read the service in full: neither use nor fill the local result cache (docs/cache.md).',
  },
  refresh: {
    type: 'boolean',
    help: 'Read the service in full and replace the cached result.',
  },
};

/** `off`, or the directory to use (`refresh`: replace, never serve). */
export type CacheSetting =
  | { readonly mode: 'off' }
  | { readonly mode: 'use' | 'refresh'; readonly dir: string };

export type ConnectionSettings =
  | {
      readonly kind: 'service';
      readonly baseUrl: string;
      readonly apiKey: string | undefined;
      readonly allowInsecureHttp: boolean;
      readonly cache: CacheSetting;
      /** `--timeout` in ms; undefined: the library's default. */
      readonly timeoutMs: number | undefined;
      /** `--proxy`; unset, the library reads HTTPS_PROXY / HTTP_PROXY / NO_PROXY. */
      readonly proxy: string | undefined;
      /** `--ca-file`, for messages and `dqs doctor`. */
      readonly caFile: string | undefined;
    }
  | { readonly kind: 'embedded'; readonly timeoutMs: number | undefined };

export interface Connection {
  readonly client: DatasetClient;
  readonly baseUrl: string;
  /** True when the requests go to the emulator this process started. */
  readonly embedded: boolean;
  close(): Promise<void>;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/**
 * Flags (`--base-url`, `--api-key`, the key of `--api-key-file` as `fileKey`) first, then `DQS_BASE_URL`
 * / `DQS_API_KEY`; no address → embedded.
 */
export function resolveConnection(
  values: Values,
  env: NodeJS.ProcessEnv,
  fileKey?: string,
  command = '',
): ConnectionSettings {
  const baseUrl = nonEmpty(str(values, 'base-url')) ?? nonEmpty(env.DQS_BASE_URL);
  const timeout = int(command, values, 'timeout', 1, 3600);
  const timeoutMs = timeout === undefined ? undefined : timeout * 1000;
  const noCache = flag(values, 'no-cache');
  const refresh = flag(values, 'refresh');
  if (noCache && refresh) {
    throw new UsageError('--no-cache leaves the cache alone, --refresh replaces an entry: use one');
  }
  // The embedded emulator gets a new port, hence new keys, on every run: its results are never cached.
  if (baseUrl === undefined) return { kind: 'embedded', timeoutMs };
  // No cache directory (no HOME): commands work as without a cache, never write into the working directory.
  const dir = noCache ? undefined : defaultCacheDir(env);
  return {
    kind: 'service',
    baseUrl,
    apiKey: nonEmpty(str(values, 'api-key')) ?? nonEmpty(fileKey) ?? nonEmpty(env.DQS_API_KEY),
    allowInsecureHttp: flag(values, 'allow-insecure-http'),
    proxy: nonEmpty(str(values, 'proxy')),
    caFile: nonEmpty(str(values, 'ca-file')),
    cache: dir === undefined ? { mode: 'off' } : { mode: refresh ? 'refresh' : 'use', dir },
    timeoutMs,
  };
}

/** The secrets to keep out of every line the CLI prints. */
export function secretsOf(values: Values, env: NodeJS.ProcessEnv, fileKey?: string): string[] {
  const proxies = [str(values, 'proxy'), env.https_proxy, env.HTTPS_PROXY, env.http_proxy, env.HTTP_PROXY];
  return [str(values, 'api-key'), fileKey, env.DQS_API_KEY, ...proxies.flatMap(proxyPassword)].filter(
    (s): s is string => !!s && s.length > 0,
  );
}

/** The password of a proxy URL (`http://user:PASSWORD@host`), in both spellings: never printed. */
function proxyPassword(url: string | undefined): string[] {
  if (!url) return [];
  try {
    const { password } = new URL(url);
    return password ? [password, decodeURIComponent(password)] : [];
  } catch {
    return [];
  }
}

/**
 * The certificates of `--ca-file PATH` (PEM, one or several), read here so a missing file is a local
 * error naming the flag.
 */
export async function readCaFile(path: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new LocalError(`cannot read --ca-file ${path}: ${systemReason(err)}`, { cause: err });
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) {
    throw new UsageError(`--ca-file ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  }
  return text;
}

/**
 * The key of `--api-key-file FILE` (`-`: stdin): its first line, without the line break and surrounding
 * blanks. A file keeps the key out of `ps` and the shell history, where `--api-key` puts it.
 */
export async function readApiKeyFile(values: Values, io: CliIo): Promise<string | undefined> {
  const file = str(values, 'api-key-file');
  if (file === undefined) return undefined;
  if (str(values, 'api-key') !== undefined) {
    throw new UsageError('give the key once: --api-key or --api-key-file, not both');
  }
  if (file === '-' && str(values, 'tickers-file') === '-') {
    throw new UsageError('stdin cannot be both --api-key-file and --tickers-file');
  }
  let text: string;
  try {
    text = file === '-' ? await readAll(io.stdin) : await readFile(file, 'utf8');
  } catch (err) {
    throw new LocalError(`cannot read --api-key-file ${file}: ${systemReason(err)}`, { cause: err });
  }
  const key = (text.split(/\r?\n/, 1)[0] ?? '').trim();
  if (key === '') throw new UsageError(`--api-key-file ${file} holds no key on its first line`);
  return key;
}

/**
 * Opens the connection; `notice` gets the one line that says the embedded emulator is in use.
 * The emulator module is loaded only then, so commands against a real service never pay for it.
 */
export async function openConnection(
  settings: ConnectionSettings,
  notice: (line: string) => void,
): Promise<Connection> {
  // Loaded here, not at start-up: `--help` and usage errors answer without loading undici and Arrow.
  const { DatasetClient } = await import('../client.js');
  if (settings.kind === 'service') {
    const client = new DatasetClient({
      baseUrl: settings.baseUrl,
      allowInsecureHttp: settings.allowInsecureHttp,
      // Explicit, so the library does not fall back on DQS_API_KEY when the user gave no key.
      apiKey: settings.apiKey ?? '',
      ...(settings.timeoutMs !== undefined ? { timeoutMs: settings.timeoutMs } : {}),
      ...(settings.proxy !== undefined ? { proxy: settings.proxy } : {}),
      ...(settings.caFile !== undefined ? { ca: await readCaFile(settings.caFile) } : {}),
      ...(settings.cache.mode === 'off'
        ? {}
        : { cache: { dir: settings.cache.dir, refresh: settings.cache.mode === 'refresh' } }),
    });
    return { client, baseUrl: client.baseUrl, embedded: false, close: () => client.close() };
  }
  const { startEmulator } = await import('../emulator/index.js');
  // No page cache: one command reads each page once, and the default 256 MiB cache only grew the process
  // (`dqs query job_listings --out x.arrow`: peak RSS 604 MB with it, 446 MB without). One client on
  // loopback: no connection waits to be accepted, so no helper process for a wide accept either.
  const emulator = await startEmulator({ port: 0, pageCacheSize: 0, acceptWidth: 1 });
  // `proxy: false`: a company proxy from HTTPS_PROXY cannot reach this process's own emulator.
  const client = new DatasetClient({
    baseUrl: emulator.url,
    apiKey: emulator.apiKey,
    proxy: false,
    ...(settings.timeoutMs !== undefined ? { timeoutMs: settings.timeoutMs } : {}),
  });
  notice(`no DQS_BASE_URL given; using the embedded emulator at ${emulator.url} (synthetic data)`);
  return {
    client,
    baseUrl: client.baseUrl,
    embedded: true,
    async close() {
      await client.close();
      await emulator.close();
    },
  };
}
