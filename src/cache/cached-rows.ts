/**
 * `CachedRows`: what a result stream of a caching client reads. For a hit it serves the entry (verified
 * whole before the first row); for a miss, a stale entry or a stream asking for other value types, it
 * reads the service through an inner page-engine stream and writes the batches to a new entry on the way,
 * committed only once every row of the result has passed (a stream broken off, failed or started past
 * row 1 stores nothing).
 */
import { RecordBatch } from 'apache-arrow';
import type { Chunk, ColumnKind } from '../convert/index.js';
import { ProtocolError } from '../core/errors.js';
import type {
  LocalMark,
  LocalReadContext,
  LocalRows,
  LocalStep,
  ResultSource,
} from '../query/result-source.js';
import { ResultStream } from '../query/result-stream.js';
import { checkIdentity, type EntryHeader, EntryProblem } from './entry-format.js';
import { EntryWriter, type LoadedEntry, loadEntry, removeEntry, touchEntry } from './entry-store.js';
import type { CacheEvent } from './events.js';
import { rowMaker, serveBatches } from './serve.js';

/** What the cache lends its entries: where they live, the eviction budget and its event sink. */
export interface CacheContext {
  readonly dir: string;
  readonly emit: (event: CacheEvent) => void;
  /** Runs eviction after an entry was stored. */
  readonly stored: () => Promise<void>;
}

export interface CachedRowsInit {
  readonly cache: CacheContext;
  readonly key: string;
  readonly path: string;
  readonly baseUrl: string;
  readonly body: string;
  /** The result as the service (or a validated entry) describes it; `local` unset. */
  readonly source: ResultSource;
  /** The validated entry's header for a hit; `undefined` for a result read from the service. */
  readonly entry: EntryHeader | undefined;
  /**
   * The tickers of the body the dataset lacked (`checkTickers`) when this result was checked, recorded
   * in an entry filled from it; `undefined`: not checked.
   */
  readonly unknownTickers: readonly string[] | undefined;
  /** A hit's entry, already being read and verified: for the first stream that serves it. */
  readonly preloaded?: Promise<LoadedEntry> | undefined;
  /** A new, uncached look at the result, for a hit whose entry turns out unreadable. */
  readonly refetch: (signal: AbortSignal) => Promise<ResultSource>;
}

function typesKey(types: Readonly<Record<string, ColumnKind>> | null | undefined): string {
  if (!types) return '{}';
  return JSON.stringify(Object.fromEntries(Object.entries(types).sort(([a], [b]) => (a < b ? -1 : 1))));
}

/** The result's identity: a result read again must be this one for the rows announced to be right. */
function sameResult(a: ResultSource | EntryHeader, b: ResultSource): boolean {
  return (
    ('queryId' in a ? a.queryId : a.id) === b.id &&
    a.total === b.total &&
    a.truncated === b.truncated &&
    JSON.stringify(a.fields) === JSON.stringify(b.fields)
  );
}

export class CachedRows implements LocalRows {
  readonly #init: CachedRowsInit;
  /** Taken by the first stream: later ones read the entry again rather than keep it in memory. */
  #preloaded: Promise<LoadedEntry> | undefined;

  constructor(init: CachedRowsInit) {
    this.#init = init;
    this.#preloaded = init.preloaded;
  }

  /** `'hit'` when streams read the entry, `'miss'` when they read the service (and fill an entry). */
  get status(): 'hit' | 'miss' {
    return this.#init.entry ? 'hit' : 'miss';
  }

  open(ctx: LocalReadContext): AsyncIterable<LocalStep> | undefined {
    const { entry, source } = this.#init;
    const { options } = ctx;
    // Entries hold Float64 numbers: exact numbers are read from the service, and not stored.
    if (options.bigNumbers !== 'error') return this.#direct(ctx);
    const sameValues =
      entry !== undefined &&
      typesKey(entry.types) === typesKey(options.types) &&
      entry.onInvalid === options.onInvalid;
    if (sameValues) return this.#serve(ctx, entry);
    this.#preloaded = undefined; // other values: read from the service
    // A result that cannot be validated later (no table JSON, so no last_date_updated) is not stored.
    if (source.lastDateUpdated === undefined) return this.#direct(ctx);
    if (options.startRow !== 1) return entry && !entry.split ? this.#fromService(ctx) : this.#direct(ctx);
    return this.#fill(ctx, source);
  }

  /**
   * Rows from the service, no entry filled: the page engine (`undefined`: it reads a split result's
   * parts too), or, for a hit on a split entry, the parts read anew (the entry's query id is the whole
   * list's, whose pages are truncated).
   */
  #direct(ctx: LocalReadContext): AsyncIterable<LocalStep> | undefined {
    const { source, entry } = this.#init;
    return entry?.split && !source.parts ? this.#splitAgain(ctx) : undefined;
  }

  async *#splitAgain(ctx: LocalReadContext): AsyncGenerator<LocalStep> {
    const fresh = await this.#init.refetch(ctx.signal);
    if (!sameResult(this.#init.source, fresh) || !fresh.parts) {
      throw new ProtocolError(
        "the service's result is no longer the one the cached split result held (total, truncation or columns changed): run the query again",
      );
    }
    // With the stream's own options (row objects, other value types): nothing of it is stored.
    const inner = new ResultStream(async () => fresh, {
      ...ctx.options,
      onTruncated: 'warn',
      signal: ctx.signal,
    });
    inner.on('retry', ctx.retry);
    const marks: LocalMark[] = [];
    const offset = ctx.options.startRow;
    inner.on('progress', (e) => {
      marks.push({ end: offset + e.rows, pages: e.pages, bytes: e.bytes, source: 'service' });
    });
    try {
      for await (const chunk of inner) {
        const out: Chunk = chunk instanceof RecordBatch ? new RecordBatch(ctx.schema, chunk.data) : chunk;
        yield { chunks: [out], marks: marks.splice(0) };
      }
    } finally {
      if (!inner.destroyed) inner.destroy();
    }
  }

  async *#serve(ctx: LocalReadContext, entry: EntryHeader): AsyncGenerator<LocalStep> {
    const { path, key, cache } = this.#init;
    let steps: Iterable<LocalStep>;
    try {
      const preloaded = this.#preloaded;
      this.#preloaded = undefined;
      const loaded = await (preloaded ?? loadEntry(path));
      // The file read whole may not be the one whose header the lookup read (replaced, or linked since).
      checkIdentity(loaded.header, {
        key,
        baseUrl: this.#init.baseUrl,
        datasetId: this.#init.source.datasetId,
        body: this.#init.body,
      });
      // Another process may have replaced the entry since it was validated: fine if it is the same result.
      if (
        !sameResult(loaded.header, this.#init.source) ||
        loaded.header.lastDateUpdated !== entry.lastDateUpdated
      ) {
        throw new EntryProblem('missing', 'the entry was replaced by another result');
      }
      const served = serveBatches(loaded.batches, ctx, loaded.bytes);
      // Runs every check (schemas included) before the first row is handed out.
      steps = [...served];
      await touchEntry(path);
    } catch (err) {
      if (!(err instanceof EntryProblem)) throw err;
      if (err.reason !== 'missing') await removeEntry(path);
      cache.emit({ type: 'unreadable', key, reason: err.message });
      yield* this.#refill(ctx);
      return;
    }
    yield* steps;
  }

  /** The entry could not be served: the same result again from the service, stored anew. */
  async *#refill(ctx: LocalReadContext): AsyncGenerator<LocalStep> {
    const fresh = await this.#init.refetch(ctx.signal);
    if (!sameResult(this.#init.source, fresh)) {
      throw new ProtocolError(
        "the cached entry could not be read, and the service's result is no longer the one it held (total, truncation or columns changed): run the query again",
      );
    }
    if (ctx.options.startRow !== 1 || fresh.lastDateUpdated === undefined) {
      yield* this.#fromService(ctx, fresh);
      return;
    }
    yield* this.#fill(ctx, fresh);
  }

  /** The page engine's stream of `source` with this stream's options, batches re-labelled with its schema. */
  #inner(ctx: LocalReadContext, source: ResultSource, fromRow: number): ResultStream {
    const inner = new ResultStream(async () => source, {
      ...ctx.options,
      output: 'arrow',
      startRow: fromRow,
      // The outer stream has already announced (or refused) the truncation.
      onTruncated: 'warn',
      signal: ctx.signal,
    });
    inner.on('retry', ctx.retry);
    return inner;
  }

  /** Rows from the service without storing them (a stream that starts past row 1). */
  async *#fromService(
    ctx: LocalReadContext,
    source: ResultSource = this.#init.source,
  ): AsyncGenerator<LocalStep> {
    yield* this.#relay(ctx, this.#inner(ctx, source, ctx.options.startRow), undefined);
  }

  async *#fill(ctx: LocalReadContext, source: ResultSource): AsyncGenerator<LocalStep> {
    const { cache, key, baseUrl, body, unknownTickers } = this.#init;
    const header: EntryHeader = {
      key,
      baseUrl,
      datasetId: source.datasetId,
      body,
      queryId: source.id,
      total: source.total,
      truncated: source.truncated,
      lastDateUpdated: source.lastDateUpdated!,
      formats: [...source.formats],
      fields: [...source.fields],
      types: ctx.options.types ? { ...ctx.options.types } : null,
      onInvalid: ctx.options.onInvalid,
      fetchedAt: Date.now(),
      ...(unknownTickers ? { unknownTickers: [...unknownTickers] } : {}),
      ...(source.split ? { split: source.split } : {}),
    };
    let writer: EntryWriter | undefined;
    try {
      writer = await EntryWriter.create(cache.dir, header);
    } catch (err) {
      cache.emit({ type: 'error', key, error: err as Error });
    }
    const inner = this.#inner(ctx, source, 1);
    let stored = false;
    try {
      let rows = 0;
      yield* this.#relay(ctx, inner, async (batch) => {
        rows += batch.numRows;
        if (!writer) return;
        try {
          await writer.write(batch);
        } catch (err) {
          cache.emit({ type: 'error', key, error: err as Error });
          await writer.discard();
          writer = undefined;
        }
      });
      if (writer && rows === source.total) {
        try {
          await writer.commit();
          stored = true;
          cache.emit({
            type: 'stored',
            key,
            datasetId: source.datasetId,
            queryId: source.id,
            bytes: writer.bytes,
          });
          await cache.stored();
        } catch (err) {
          cache.emit({ type: 'error', key, error: err as Error });
        }
      }
    } finally {
      if (!stored) await writer?.discard();
    }
  }

  /**
   * Hands on the inner stream's batches (or row objects made from them) with its progress marks, after
   * `onBatch` has seen each batch. Destroying the outer stream aborts the signal the inner one listens to.
   */
  async *#relay(
    ctx: LocalReadContext,
    inner: ResultStream,
    onBatch: ((batch: RecordBatch) => Promise<void>) | undefined,
  ): AsyncGenerator<LocalStep> {
    const marks: LocalMark[] = [];
    const offset = ctx.options.startRow;
    inner.on('progress', (e) => {
      marks.push({ end: offset + e.rows, pages: e.pages, bytes: e.bytes, source: 'service' });
    });
    const toRows = ctx.options.output === 'rows' ? rowMaker(ctx.plan, ctx.options.dates) : undefined;
    try {
      for await (const chunk of inner) {
        const batch = new RecordBatch(ctx.schema, (chunk as RecordBatch).data);
        if (onBatch) await onBatch(batch);
        if (!toRows) {
          yield { chunks: [batch], marks: marks.splice(0) };
          continue;
        }
        if (batch.numRows === 0) continue;
        for (let from = 0; from < batch.numRows; from += 1000) {
          const to = Math.min(batch.numRows, from + 1000);
          yield {
            chunks: toRows(batch, from, to),
            marks: to === batch.numRows ? marks.splice(0) : undefined,
          };
        }
      }
    } finally {
      if (!inner.destroyed) inner.destroy();
    }
  }
}
