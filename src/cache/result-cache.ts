/**
 * `ResultCache`: the lookup in front of `client.query()`. A result is identified by its key (see key.ts);
 * an entry found for it is validated with the service in two small requests before it is used (the POST,
 * whose handle gives the query id, state and total; and a one-row page, which gives last_date_updated,
 * the descriptors, the total and the truncation headers), unless `maxAge` allows it without asking. Any
 * difference, or a query still running, means the result is read from the service and the entry replaced.
 */
import type { QueryHandle, WireBody } from '../core/wire.js';
import { parseTablePage } from '../decode/table-json.js';
import type { ResultSource } from '../query/result-source.js';
import type { RequestScheduler } from '../query/scheduler.js';
import type { TickerCheck } from '../tickers/coverage.js';
import { type EndpointClient, statusFromHeaders } from '../transport/endpoints.js';
import { bodyText } from '../transport/http.js';
import { CachedRows } from './cached-rows.js';
import {
  checkIdentity,
  type EntryHeader,
  type EntryIdentity,
  EntryProblem,
  readHeader,
} from './entry-format.js';
import { entryPath, evict, type LoadedEntry, loadEntry, removeEntry } from './entry-store.js';
import type { CacheEvent } from './events.js';
import { accountId, cacheSecret, canonicalBody, entryKey } from './key.js';
import type { NormalizedCacheOptions } from './options.js';
import { trustCacheDir, UnsafeCache } from './trust.js';

export interface CachedQuery {
  readonly client: EndpointClient;
  readonly datasetId: string;
  readonly body: WireBody;
  /**
   * `split: true`: the entry is another one than the unsplit result's (its key says so), and holds the
   * rows of every part; it is validated against the whole list's query, which the service truncates.
   */
  readonly split?: boolean | undefined;
  readonly signal: AbortSignal | undefined;
  /** Never serve the entry: read the service and replace it. */
  readonly refresh: boolean;
  /** The uncached lifecycle; given a handle, it goes on from that POST instead of making another. */
  readonly fetch: (handle?: QueryHandle, signal?: AbortSignal) => Promise<ResultSource>;
  /** The client's shared scheduler, for streams of a hit that read the service after all. */
  readonly scheduler?: RequestScheduler | undefined;
  /**
   * `checkTickers`, when asked for and the body names tickers. Its answer is recorded in the entry: a hit
   * (validated, or allowed by `maxAge`) reports the recorded answer instead of asking again, since the
   * result, hence which tickers have no rows in it, is the one the entry holds. A miss, a stale entry or
   * an entry filled without the check asks the service.
   */
  readonly tickers?: TickerCheck | undefined;
}

export class ResultCache {
  readonly options: NormalizedCacheOptions;
  readonly #credential: () => string | undefined | Promise<string | undefined>;
  readonly #emit: (event: CacheEvent) => void;
  #secret: Promise<Buffer> | undefined;

  constructor(
    options: NormalizedCacheOptions,
    credential: () => string | undefined | Promise<string | undefined>,
    emit: (event: CacheEvent) => void,
  ) {
    this.options = options;
    this.#credential = credential;
    this.#emit = emit;
  }

  async #key(baseUrl: string, datasetId: string, body: string, split: boolean): Promise<string> {
    this.#secret ??= cacheSecret(this.options.dir);
    let secret: Buffer;
    try {
      secret = await this.#secret;
    } catch (err) {
      this.#secret = undefined; // an unwritable directory may be fixed while the process lives
      throw err;
    }
    const account = accountId(secret, await this.#credential());
    return entryKey({ baseUrl, datasetId, body, account, ...(split ? { split } : {}) });
  }

  async query(q: CachedQuery): Promise<ResultSource> {
    const { client, datasetId } = q;
    const baseUrl = client.baseUrl;
    const body = canonicalBody(q.body);
    let key: string;
    try {
      // Checked for every query: a directory made safe (or unsafe) meanwhile is taken as it is now.
      await trustCacheDir(this.options.dir);
      key = await this.#key(baseUrl, datasetId, body, q.split === true);
    } catch (err) {
      this.#emit(
        err instanceof UnsafeCache
          ? { type: 'unsafe', dir: this.options.dir, reason: err.reason, fix: err.fix }
          : { type: 'error', key: undefined, error: err as Error },
      );
      q.tickers?.report(await q.tickers.run());
      return q.fetch();
    }
    const path = entryPath(this.options.dir, key);
    /** Asks the service which tickers the dataset lacks, and reports them (a refusal throws). */
    const checkTickers = async (): Promise<readonly string[] | undefined> => {
      if (!q.tickers) return undefined;
      const unknown = await q.tickers.run();
      q.tickers.report(unknown);
      return unknown;
    };
    const wrap = (
      source: ResultSource,
      entry: EntryHeader | undefined,
      unknownTickers: readonly string[] | undefined,
      preloaded?: Promise<LoadedEntry>,
    ): ResultSource => ({
      ...source,
      local: new CachedRows({
        cache: {
          dir: this.options.dir,
          emit: this.#emit,
          stored: async () => {
            const done = await evict(this.options.dir, this.options.maxBytes);
            if (done.removed > 0) this.#emit({ type: 'evicted', ...done });
          },
        },
        key,
        path,
        baseUrl,
        body,
        source,
        entry,
        unknownTickers,
        preloaded,
        refetch: (signal) => q.fetch(undefined, signal),
      }),
    });

    const entry = q.refresh ? undefined : await this.#header(path, { key, baseUrl, datasetId, body });
    if (!entry) {
      this.#emit({ type: 'miss', key, datasetId, refresh: q.refresh });
      const unknown = await checkTickers();
      return wrap(await q.fetch(), undefined, unknown);
    }
    // Read and verified while the validation's requests are in flight (the process mostly waits for
    // them): a hit's rows are ready when its stream opens. A stale entry's read is wasted (and dropped).
    const preloaded = loadEntry(path);
    preloaded.catch(() => {}); // awaited, and its failure handled, only by a stream of the hit
    // An entry filled without the check cannot answer it: asked now, before the query, as without a cache.
    const recorded = entry.unknownTickers;
    const checked = q.tickers && recorded === undefined ? await checkTickers() : undefined;
    const fromEntry = (validated: boolean) => {
      // The same result as when the entry was filled: the same tickers without rows, reported (or
      // refused) as the first run did.
      if (checked === undefined && recorded !== undefined) q.tickers?.report(recorded);
      this.#emit({
        type: 'hit',
        key,
        datasetId,
        queryId: entry.queryId,
        validated,
        fetchedAt: new Date(entry.fetchedAt),
      });
      return wrap(
        {
          pages: client.pages,
          datasetId,
          id: entry.queryId,
          total: entry.total,
          truncated: entry.truncated,
          formats: entry.formats,
          fields: entry.fields,
          scheduler: q.scheduler,
          lastDateUpdated: entry.lastDateUpdated,
          split: entry.split,
        },
        entry,
        checked ?? recorded,
        preloaded,
      );
    };
    const maxAge = this.options.maxAge;
    if (maxAge !== undefined && Date.now() - entry.fetchedAt <= maxAge) return fromEntry(false);

    const handle = await client.postQuery(datasetId, q.body, { signal: q.signal });
    const reason =
      handleDiffers(handle, entry) ?? (await this.#pageDiffers(client, datasetId, handle, entry, q.signal));
    if (reason === undefined) return fromEntry(true);
    this.#emit({ type: 'stale', key, datasetId, reason });
    // The result changed, and which tickers the dataset carries may have too: asked again.
    const unknown = checked ?? (await checkTickers());
    return wrap(await q.fetch(handle), undefined, unknown);
  }

  /**
   * The entry's header, or `undefined` (no entry, or one that can never be served for this query:
   * removed). Checked against the query before anything else, `maxAge` included.
   */
  async #header(path: string, identity: EntryIdentity): Promise<EntryHeader | undefined> {
    try {
      const { header } = await readHeader(path);
      checkIdentity(header, identity);
      return header;
    } catch (err) {
      if (err instanceof EntryProblem && err.reason !== 'missing') {
        await removeEntry(path);
        this.#emit({ type: 'unreadable', key: identity.key, reason: err.message });
      }
      return undefined;
    }
  }

  /** The one-row page: last_date_updated, descriptors, total and (when the GET says) truncation. */
  async #pageDiffers(
    client: EndpointClient,
    datasetId: string,
    handle: QueryHandle,
    entry: EntryHeader,
    signal: AbortSignal | undefined,
  ): Promise<string | undefined> {
    const response = await client.readPageBytes(datasetId, handle.id, { start: 1, limit: 1, signal });
    const page = parseTablePage(bodyText(response.bytes, response.info), { start: 1, limit: 1 });
    if (page.last_date_updated !== entry.lastDateUpdated) {
      return `last_date_updated is ${page.last_date_updated}, the entry's ${entry.lastDateUpdated}`;
    }
    const { total, truncated: expected } = asServed(entry);
    if (page.total !== total) return `the page's total is ${page.total}, the entry's ${total}`;
    if (JSON.stringify(page.fields) !== JSON.stringify(entry.fields)) return 'the column descriptors changed';
    // Only when the GET carries the header: a service that sends it on HEAD only must not look stale.
    if (response.headers['x-truncated'] !== undefined) {
      const { truncated } = statusFromHeaders({ ...response, status: 200 });
      if (truncated !== expected) return `truncated is ${truncated}, the entry's ${expected}`;
    }
    return undefined;
  }
}

/** What the POST's handle says against the entry, or `undefined` when it agrees. */
function handleDiffers(handle: QueryHandle, entry: EntryHeader): string | undefined {
  if (handle.state !== 'complete') return `the query is ${handle.state} again`;
  if (handle.id !== entry.queryId) return 'the service gives the query another id';
  const { total } = asServed(entry);
  if (handle.total !== total) return `the total is ${handle.total}, the entry's ${total}`;
  return undefined;
}

/**
 * What the service says of the entry's query when its result has not changed. A split entry holds more
 * rows than the whole list's query, which the service truncates: it reports the cap it reported then.
 */
function asServed(entry: EntryHeader): { total: number; truncated: boolean } {
  return entry.split
    ? { total: entry.split.cappedTotal, truncated: true }
    : { total: entry.total, truncated: entry.truncated };
}
