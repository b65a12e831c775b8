/**
 * The `cache` client option: `true` for the defaults, or `{ dir, maxAge, maxBytes, refresh }`. Normalized
 * once, when the client is made, so a bad value fails before any request.
 */
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import {
  checkKeys,
  checkNumber,
  checkObject,
  invalid,
  optionalBoolean,
  optionalInteger,
  optionKeys,
} from '../core/validate.js';

export interface CacheOptions {
  /**
   * Directory of the entries; must be absolute (a relative path would put results in whatever directory
   * the process happens to run in).
   * @default `$XDG_CACHE_HOME/dqs-client`, else ~/.cache/dqs-client (Linux), ~/Library/Caches/dqs-client
   * (macOS), %LOCALAPPDATA%\dqs-client\Cache (Windows)
   */
  readonly dir?: string;
  /**
   * Time-only mode, in ms: an entry fetched at most this long ago is served with no request at all (offline
   * notebooks). Older entries, and every entry without `maxAge`, are validated with two small requests.
   * @default undefined (always validate)
   */
  readonly maxAge?: number;
  /**
   * Bytes the entries may take in all; the least recently used are removed beyond it. Minimum 1.
   * @default 1 GiB
   */
  readonly maxBytes?: number;
  /** Never serve an entry: fetch every result again and replace its entry (`dqs query --refresh`). @default false */
  readonly refresh?: boolean;
}

export interface NormalizedCacheOptions {
  readonly dir: string;
  readonly maxAge: number | undefined;
  readonly maxBytes: number;
  readonly refresh: boolean;
}

export const DEFAULT_MAX_BYTES = 1024 ** 3;

/**
 * The platform's per-user cache directory for dqs-client, or `undefined` when there is none (no home
 * directory): never the working directory. A relative `XDG_CACHE_HOME` is ignored, as the XDG spec says.
 */
export function defaultCacheDir(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'dqs-client');
  if (platform === 'win32') {
    const local = env.LOCALAPPDATA;
    return local && isAbsolute(local) ? join(local, 'dqs-client', 'Cache') : undefined;
  }
  let home: string | undefined;
  try {
    home = env.HOME || homedir();
  } catch {
    home = undefined;
  }
  if (!home || !isAbsolute(home)) return undefined;
  return platform === 'darwin'
    ? join(home, 'Library', 'Caches', 'dqs-client')
    : join(home, '.cache', 'dqs-client');
}

/** `undefined` when the cache is off (`undefined` or `false`). */
const CACHE_KEYS = optionKeys<CacheOptions>({ dir: true, maxAge: true, maxBytes: true, refresh: true });

export function normalizeCacheOptions(
  option: boolean | CacheOptions | undefined,
  env: NodeJS.ProcessEnv = process.env,
): NormalizedCacheOptions | undefined {
  if (option === undefined || option === false) return undefined;
  const o: CacheOptions =
    option === true ? {} : checkObject(option, 'cache', 'a boolean or { dir, maxAge, maxBytes, refresh }');
  checkKeys(o, CACHE_KEYS, '`cache` options', 'cache.');
  let dir = o.dir;
  if (dir !== undefined && (typeof dir !== 'string' || !isAbsolute(dir))) {
    throw invalid('cache.dir', 'an absolute path', dir);
  }
  dir ??= defaultCacheDir(env);
  if (dir === undefined) {
    throw invalid(
      'cache.dir',
      'an absolute path (this user has no cache directory: no XDG_CACHE_HOME, HOME or LOCALAPPDATA)',
      dir,
    );
  }
  const maxAge = o.maxAge === undefined ? undefined : checkNumber(o.maxAge, 'cache.maxAge', 0);
  const maxBytes = optionalInteger(o.maxBytes, 'cache.maxBytes', 1, DEFAULT_MAX_BYTES);
  const refresh = optionalBoolean(o.refresh, 'cache.refresh', false);
  return { dir, maxAge, maxBytes, refresh };
}
