/**
 * `dqs cache list | clear | prune`: the local result cache that `dqs query` and `dqs export` use (and
 * `cacheNote()`, the line those commands add to their summary). See docs/cache.md.
 */

import type { EntryHeader } from '../../cache/entry-format.js';
import type { CacheEvent } from '../../cache/events.js';
import { defaultCacheDir } from '../../cache/options.js';
import type { DatasetClient } from '../../client.js';
import { flag, int, JSON_OPTION, positionals } from '../args.js';
import type { Command, CommandContext } from '../command.js';
import { systemReason, UsageError } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { printJson, terminalWidth } from '../print.js';
import { bytes, count, duration, table } from '../text.js';

const ACTIONS = ['list', 'clear', 'prune'] as const;
const DEFAULT_MAX_BYTES = 1024 ** 3;

export const cacheCommand: Command = {
  name: 'cache',
  summary: 'List, clear or prune the local result cache of `dqs query` and `dqs export`.',
  usage: 'dqs cache list|clear|prune [options]',
  description:
    'dqs query and dqs export keep each complete result in a per-user cache directory\n' +
    '($XDG_CACHE_HOME/dqs-client, else ~/.cache/dqs-client; ~/Library/Caches/dqs-client on macOS), so\n' +
    'running the same command again costs two small requests to check the result is unchanged instead of\n' +
    'the whole download. `list` shows the entries (least recently used first), `clear` removes them all,\n' +
    '`prune` removes entries that fail verification or are of another format, temporary files of writers\n' +
    'that died, and the least recently used entries beyond --max-bytes.',
  options: {
    'max-bytes': {
      type: 'string',
      arg: 'N',
      help: 'prune: keep at most N bytes of entries (default 1073741824, 1 GiB).',
    },
    ...JSON_OPTION,
  },
  connects: false,
  examples: ['dqs cache list', 'dqs cache prune --max-bytes 200000000', 'dqs cache clear'],
  async run(args, ctx) {
    const [action] = positionals('cache', args, ['action']);
    if (!(ACTIONS as readonly string[]).includes(action!)) {
      throw new UsageError(`Expected list, clear or prune, got ${JSON.stringify(action)}`, 'cache');
    }
    const dir = defaultCacheDir(ctx.io.env);
    if (dir === undefined) throw new UsageError('this user has no cache directory (no HOME)', 'cache');
    const json = flag(args.values, 'json');
    // Loaded here: `dqs cache --help` does not load Arrow.
    const [store, trust] = await Promise.all([
      import('../../cache/entry-store.js'),
      import('../../cache/trust.js'),
    ]);
    // Listing, pruning and clearing are safe in any directory (nothing read is served), but the user
    // should learn why `dqs query` does not use it.
    await trust.trustCacheDir(dir, { create: false }).catch((err: unknown) => {
      if (err instanceof trust.UnsafeCache) {
        ctx.warn(`dqs query and dqs export do not use this cache: ${err.reason}; ${err.fix}`);
      }
    });
    if (action === 'clear') {
      const done = await store.clearEntries(dir);
      if (json) printJson(ctx.io.stdout, { dir, removed: done.removed, bytes: done.bytes });
      ctx.info(`removed ${count(done.removed)} files (${bytes(done.bytes)}) from ${dir}`);
      return ExitCode.ok;
    }
    if (action === 'prune') {
      const maxBytes = int('cache', args.values, 'max-bytes', 1) ?? DEFAULT_MAX_BYTES;
      const done = await store.pruneEntries(dir, maxBytes);
      if (json) printJson(ctx.io.stdout, { dir, ...done });
      ctx.info(
        `removed ${count(done.corrupt)} unusable entries, ${count(done.temps)} abandoned temporary files and ` +
          `${count(done.evicted)} least recently used entries (${bytes(done.bytes)}) from ${dir}`,
      );
      return ExitCode.ok;
    }
    const entries = await store.listEntries(dir);
    const now = Date.now();
    if (json) {
      printJson(ctx.io.stdout, {
        dir,
        entries: entries.map((e) => ({
          key: e.kind === 'entry' ? e.name.slice(0, 64) : null,
          kind: e.kind,
          bytes: e.size,
          lastUsed: new Date(e.mtimeMs).toISOString(),
          baseUrl: e.header?.baseUrl ?? null,
          dataset: e.header?.datasetId ?? null,
          body: e.header ? JSON.parse(e.header.body) : null,
          rows: e.header?.total ?? null,
          truncated: e.header?.truncated ?? null,
          fetchedAt: e.header ? new Date(e.header.fetchedAt).toISOString() : null,
          lastDateUpdated: e.header?.lastDateUpdated ?? null,
          // A file of an unfinished split read's checkpoint (its plan, or a finished part), not a result.
          checkpoint: e.header?.checkpoint ?? null,
          problem: e.problem ?? null,
        })),
      });
      return ExitCode.ok;
    }
    const total = entries.reduce((n, e) => n + e.size, 0);
    if (entries.length > 0) {
      const text = table(
        entries,
        [
          {
            header: 'DATASET',
            value: (e) => e.header?.datasetId ?? (e.kind === 'temp' ? '(being written)' : '?'),
          },
          { header: 'ROWS', value: (e) => (e.header ? count(e.header.total) : '-'), right: true },
          { header: 'SIZE', value: (e) => bytes(e.size), right: true },
          { header: 'FETCHED', value: (e) => (e.header ? `${duration(now - e.header.fetchedAt)} ago` : '-') },
          { header: 'USED', value: (e) => `${duration(now - e.mtimeMs)} ago` },
          {
            header: 'QUERY',
            value: (e) =>
              e.header
                ? `${checkpointText(e.header.checkpoint)}${e.header.baseUrl} ${e.header.body}`
                : (e.problem ?? e.name),
          },
        ],
        terminalWidth(ctx.io.stdout),
      );
      ctx.io.stdout.write(`${text}\n`);
    }
    ctx.info(`${count(entries.length)} files, ${bytes(total)} in ${dir}`);
    return ExitCode.ok;
  },
};

/** How `dqs cache list` shows a file of an unfinished split read's checkpoint (before its query). */
function checkpointText(mark: EntryHeader['checkpoint']): string {
  if (!mark) return '';
  return mark.kind === 'plan'
    ? '(checkpoint: the parts of an unfinished --split-truncated read of) '
    : `(checkpoint: the rows of ${mark.tickers.join(', ')}, a finished part of an unfinished --split-truncated read of) `;
}

/** What became of one result's entry, from the cache events of its key. */
interface Outcome {
  /** Served from the entry (cleared when the entry then failed its checks). */
  hit?: Extract<CacheEvent, { type: 'hit' }>;
  /** Why the entry found could not be served (the result was read from the service instead). */
  unusable?: string;
  /** What differed on the service. */
  stale?: string;
  /** Why the result read from the service was not stored. */
  notStored?: string;
  /** A split read went on from the checkpoint of an interrupted run. */
  resumed?: Extract<CacheEvent, { type: 'resumed' }>;
  /** Why the checkpoint of an interrupted split read was not used (or not all of it). */
  checkpoint?: string;
}

/**
 * Follows the client's cache events: `--debug` lines as they happen, one warning when the cache directory
 * is not safe to use, and the words a summary line ends with, saying what the cache did: a hit, an entry
 * refetched (and why), a result not stored (and why), or no cache at all. Empty for a plain miss that was
 * stored, as for a run without a cache.
 */
export function cacheNote(client: DatasetClient, ctx: Pick<CommandContext, 'debug' | 'warn'>): () => string {
  const outcomes = new Map<string, Outcome>();
  const of = (key: string): Outcome => {
    const o = outcomes.get(key) ?? {};
    outcomes.set(key, o);
    return o;
  };
  /** Queries that did not use the cache at all, and why (the first reason). */
  let bypassed = 0;
  let bypassReason: string | undefined;
  client.on('cache', (e: CacheEvent) => {
    const detail = 'reason' in e ? `: ${e.reason}` : 'error' in e ? `: ${e.error.message}` : '';
    ctx.debug(`cache ${e.type}${'datasetId' in e ? ` ${e.datasetId}` : ''}${detail}`);
    switch (e.type) {
      case 'hit':
        of(e.key).hit = e;
        break;
      case 'unreadable': {
        // After a hit too: the entry failed its checks when read whole, and the rows came from the service.
        const o = of(e.key);
        delete o.hit;
        o.unusable = e.reason;
        break;
      }
      case 'miss':
        of(e.key);
        break;
      case 'stale':
        of(e.key).stale = e.reason;
        break;
      case 'stored':
        delete of(e.key).notStored;
        break;
      case 'resumed':
        of(e.key).resumed = e;
        break;
      case 'checkpoint-unusable':
        of(e.key).checkpoint ??= e.reason;
        break;
      case 'error':
        if (e.key !== undefined) {
          of(e.key).notStored ??= systemReason(e.error);
        } else {
          bypassed++;
          bypassReason ??= systemReason(e.error);
        }
        break;
      case 'unsafe':
        // One warning a run: `dqs export` makes a query per partition, each refused for the same reason.
        if (bypassReason !== 'unsafe') ctx.warn(`not using the local result cache: ${e.reason}; ${e.fix}`);
        bypassed++;
        bypassReason = 'unsafe';
        break;
    }
  });
  return () => {
    const notUsed =
      bypassReason === 'unsafe' ? 'not safe to use, see the warning above' : (bypassReason ?? '');
    const all = [...outcomes.values()];
    if (all.length + bypassed === 1) {
      if (bypassed === 1) return `; the local cache was not used (${notUsed})`;
      const o = all[0]!;
      const store = o.notStored ? `, not stored in the local cache (${o.notStored})` : '';
      if (o.hit) {
        const age = duration(Date.now() - o.hit.fetchedAt.getTime());
        return `; from the local cache (fetched ${age} ago${o.hit.validated ? ', unchanged on the service' : ''})`;
      }
      if (o.unusable) return `; the cached entry was unusable (${o.unusable}): read from the service${store}`;
      if (o.stale) return `; the cached result had changed (${o.stale}): read from the service${store}`;
      const resumed = o.resumed
        ? `; went on from an interrupted run: ${count(o.resumed.finished)} of ${count(o.resumed.parts)} parts from the local cache`
        : '';
      const checkpoint = o.checkpoint
        ? `; ${o.resumed ? 'but ' : ''}the checkpoint of an interrupted run was not used (${o.checkpoint})`
        : '';
      return resumed + checkpoint + (o.notStored ? `; not stored in the local cache (${o.notStored})` : '');
    }
    const hits = all.filter((o) => o.hit).length;
    const unusable = all.filter((o) => !o.hit && o.unusable).length;
    const failed = all.filter((o) => o.notStored);
    const parts: string[] = [];
    if (hits > 0)
      parts.push(`${count(hits)} of ${count(all.length + bypassed)} results from the local cache`);
    if (unusable > 0) {
      parts.push(`${count(unusable)} unusable cached ${unusable === 1 ? 'entry' : 'entries'} read again`);
    }
    if (failed.length > 0) {
      parts.push(`${count(failed.length)} not stored in the local cache (${failed[0]!.notStored})`);
    }
    if (bypassed > 0) parts.push(`the local cache not used for ${count(bypassed)} (${notUsed})`);
    return parts.length ? `; ${parts.join(', ')}` : '';
  };
}
