/**
 * The checkpoint of a split read (`split: true`) that has not finished: what lets the same query, run
 * again after a `kill -9` or a failure, go on where it stopped instead of splitting and reading it all
 * again. Two kinds of files in `entries/`, each an ordinary entry (same format, checksum, trust checks,
 * atomic write, LRU eviction), keyed apart from the split result's entry and never served as a result:
 *
 * - the **plan**, written when the stream starts (after the bisection): the whole list's query id, capped
 *   total, `last_date_updated` and descriptors, and the parts (tickers, query ids, totals), no rows;
 * - one **part** entry per part whose rows were all read, written as soon as its last row has passed.
 *
 * A run of the query that finds the plan checks it against the whole list's query it makes anyway (its
 * POST and first page): the same id, capped total, `last_date_updated` and descriptors mean the same
 * parts, so the list is not split again; a part with a sound entry of the same query id, total and date
 * is served from it with no request, the others are created and read as usual. Anything else (the data
 * changed, a part's query differs, an entry fails its checks) reads from the service as without a
 * checkpoint. Once the whole split result is stored as its entry, the checkpoint is removed.
 */
import type { RecordBatch } from 'apache-arrow';
import { RecordBatchBuilder } from '../convert/index.js';
import { ProtocolError } from '../core/errors.js';
import type { FieldDescriptor } from '../core/wire.js';
import type {
  LocalMark,
  LocalReadContext,
  LocalRows,
  LocalStep,
  ResultSource,
} from '../query/result-source.js';
import { ResultStream } from '../query/result-stream.js';
import type { SplitResume } from '../query/split.js';
import type { ResultPart, SplitInfo } from '../query/split-info.js';
import { checkIdentity, type EntryHeader, EntryProblem, readHeader } from './entry-format.js';
import { EntryWriter, entryPath, loadEntry, removeEntry, touchEntry } from './entry-store.js';
import type { CacheEvent } from './events.js';
import { serveBatches } from './serve.js';

export interface CheckpointInit {
  readonly dir: string;
  readonly emit: (event: CacheEvent) => void;
  /** Runs eviction after a file was stored. */
  readonly stored: () => Promise<void>;
  /** The split result's entry key (events name it). */
  readonly key: string;
  readonly baseUrl: string;
  readonly datasetId: string;
  /** The canonical body of the whole list's query. */
  readonly body: string;
  /** The key of a checkpoint file: `'plan'`, or `'part ' + JSON of the part's tickers`. */
  readonly keyOf: (checkpoint: string) => string;
}

/** A batch run's output: Arrow batches and the progress marks they complete (rows of the whole). */
export interface BatchStep {
  readonly batches: readonly RecordBatch[];
  readonly marks: readonly LocalMark[];
}

/** `types` as a string that compares equal for the same overrides in any order. */
export function typesKey(types: Readonly<Record<string, unknown>> | null | undefined): string {
  if (!types) return '{}';
  return JSON.stringify(Object.fromEntries(Object.entries(types).sort(([a], [b]) => (a < b ? -1 : 1))));
}

const sameFields = (a: readonly FieldDescriptor[], b: readonly FieldDescriptor[]) =>
  JSON.stringify(a) === JSON.stringify(b);

export class SplitCheckpoint {
  readonly #init: CheckpointInit;

  constructor(init: CheckpointInit) {
    this.#init = init;
  }

  #partKey(tickers: readonly string[]): string {
    return this.#init.keyOf(`part ${JSON.stringify(tickers)}`);
  }

  #identity(key: string) {
    const { baseUrl, datasetId, body } = this.#init;
    return { key, baseUrl, datasetId, body };
  }

  #unusable(reason: string): void {
    const { key, datasetId } = this.#init;
    this.#init.emit({ type: 'checkpoint-unusable', key, datasetId, reason });
  }

  /**
   * The plan of an unfinished read of this query (verified whole), and which of its parts have a sound
   * entry; `undefined` when there is none (a plan that fails its checks is removed, and said).
   */
  async resume(): Promise<CheckpointResume | undefined> {
    const planKey = this.#init.keyOf('plan');
    const path = entryPath(this.#init.dir, planKey);
    let plan: EntryHeader;
    try {
      const { header } = await loadEntry(path);
      checkIdentity(header, this.#identity(planKey));
      if (header.checkpoint?.kind !== 'plan' || !header.split) {
        throw new EntryProblem('foreign', 'not the plan of a split read');
      }
      plan = header;
    } catch (err) {
      if (!(err instanceof EntryProblem)) throw err;
      if (err.reason === 'missing') return undefined;
      await removeEntry(path);
      this.#unusable(`its plan: ${err.message}`);
      return undefined;
    }
    const parts = plan.split!.parts;
    const done = await Promise.all(parts.map((part) => this.#partHeader(part, plan)));
    return new CheckpointResume(this, this.#init, plan, done);
  }

  /** Part `part`'s entry header when it holds that part of this plan; a file that does not is removed. */
  async #partHeader(part: ResultPart, plan: EntryHeader): Promise<PartFile | undefined> {
    const key = this.#partKey(part.tickers);
    const path = entryPath(this.#init.dir, key);
    try {
      const { header } = await readHeader(path);
      checkIdentity(header, this.#identity(key));
      const same =
        header.checkpoint?.kind === 'part' &&
        header.queryId === part.queryId &&
        header.total === part.total &&
        header.truncated === part.truncated &&
        header.lastDateUpdated === plan.lastDateUpdated &&
        sameFields(header.fields, plan.fields);
      if (!same) throw new EntryProblem('foreign', 'another part or another result');
      return { key, path, header };
    } catch (err) {
      if (!(err instanceof EntryProblem)) throw err;
      if (err.reason !== 'missing') await removeEntry(path);
      return undefined;
    }
  }

  /** Stores the plan of `source` (a split result about to be read); a failure is an `error` event. */
  async storePlan(
    source: ResultSource,
    ctx: LocalReadContext,
    unknownTickers: readonly string[] | undefined,
  ): Promise<void> {
    const key = this.#init.keyOf('plan');
    const header: EntryHeader = {
      ...this.#identity(key),
      queryId: source.id,
      total: 0,
      truncated: true,
      lastDateUpdated: source.lastDateUpdated!,
      formats: [...source.formats],
      fields: [...source.fields],
      types: null,
      onInvalid: 'error',
      fetchedAt: Date.now(),
      ...(unknownTickers ? { unknownTickers: [...unknownTickers] } : {}),
      split: source.split!,
      checkpoint: { kind: 'plan' },
    };
    await this.#store(header, [new RecordBatchBuilder(ctx.plan, { onInvalid: 'error' }).flush()]);
  }

  async #store(header: EntryHeader, batches: readonly RecordBatch[]): Promise<EntryWriter | undefined> {
    let writer: EntryWriter | undefined;
    try {
      writer = await EntryWriter.create(this.#init.dir, header);
      for (const b of batches) await writer.write(b);
      if (header.total === 0) {
        await writer.commit();
        await this.#init.stored();
      }
      return writer;
    } catch (err) {
      await writer?.discard();
      this.#init.emit({ type: 'error', key: this.#init.key, error: err as Error });
      return undefined;
    }
  }

  /**
   * Writes the part entries of a split result while its rows pass: `feed` each batch of the service's
   * (rows from `firstRow` of the whole, in order); a part is committed when its last row has been fed.
   */
  partFiller(source: ResultSource, ctx: LocalReadContext): PartFiller {
    return new PartFiller(source, (part) => this.#openPart(part, source, ctx));
  }

  #openPart(part: ResultPart, source: ResultSource, ctx: LocalReadContext): Promise<PartSink | undefined> {
    const header: EntryHeader = {
      ...this.#identity(this.#partKey(part.tickers)),
      queryId: part.queryId,
      total: part.total,
      truncated: part.truncated,
      lastDateUpdated: source.lastDateUpdated!,
      formats: [...source.formats],
      fields: [...source.fields],
      types: ctx.options.types ? { ...ctx.options.types } : null,
      onInvalid: ctx.options.onInvalid,
      fetchedAt: Date.now(),
      checkpoint: { kind: 'part', tickers: [...part.tickers] },
    };
    return this.#store(header, []).then(
      (writer) =>
        writer && {
          write: (batch) => writer.write(batch),
          commit: async () => {
            await writer.commit();
            await this.#init.stored();
          },
          discard: () => writer.discard(),
          fail: (err) => this.#init.emit({ type: 'error', key: this.#init.key, error: err }),
        },
    );
  }

  /** Removes the plan and the part entries of `split` (the split result was stored whole, or changed). */
  async remove(split: SplitInfo | undefined): Promise<void> {
    const paths = [this.#init.keyOf('plan'), ...(split?.parts ?? []).map((p) => this.#partKey(p.tickers))];
    await Promise.all(paths.map((k) => removeEntry(entryPath(this.#init.dir, k))));
  }

  /** A finished part's rows: its entry, verified whole, or (failing that) the service's. */
  partRows(file: PartFile, reread: (signal: AbortSignal) => Promise<ResultSource>): LocalRows {
    return { open: (ctx) => this.#partSteps(ctx, file, reread) };
  }

  async *#partSteps(
    ctx: LocalReadContext,
    file: PartFile,
    reread: (signal: AbortSignal) => Promise<ResultSource>,
  ): AsyncGenerator<LocalStep> {
    const { header, path, key } = file;
    const { options } = ctx;
    let why = 'other value types than its entry holds';
    if (
      options.bigNumbers === 'error' &&
      options.startRow === 1 &&
      typesKey(header.types) === typesKey(options.types) &&
      header.onInvalid === options.onInvalid
    ) {
      try {
        const loaded = await loadEntry(path);
        checkIdentity(loaded.header, this.#identity(key));
        const h = loaded.header;
        if (
          h.queryId !== header.queryId ||
          h.total !== header.total ||
          h.lastDateUpdated !== header.lastDateUpdated
        ) {
          throw new EntryProblem('missing', 'the entry was replaced by another result');
        }
        const steps = [...serveBatches(loaded.batches, ctx, loaded.bytes)];
        await touchEntry(path);
        yield* steps;
        return;
      } catch (err) {
        if (!(err instanceof EntryProblem)) throw err;
        if (err.reason !== 'missing') await removeEntry(path);
        why = err.message;
      }
    }
    this.#unusable(
      `the entry of the finished part ${header.checkpoint?.kind === 'part' ? header.checkpoint.tickers.join(', ') : ''}: ${why}; read from the service`,
    );
    const fresh = await reread(ctx.signal);
    if (fresh.id !== header.queryId || fresh.total !== header.total) {
      throw new ProtocolError(
        "a finished part's cached entry could not be read, and the service's result of the part is no longer the one it held (another query id or total): run the query again",
      );
    }
    const inner = new ResultStream(async () => fresh, {
      ...options,
      output: 'arrow',
      startRow: 1,
      onTruncated: 'warn',
      signal: ctx.signal,
    });
    inner.on('retry', ctx.retry);
    for await (const step of batchSteps(inner, 1)) yield { chunks: step.batches, marks: step.marks };
  }
}

/** A part's file found by a lookup. */
export interface PartFile {
  readonly key: string;
  readonly path: string;
  readonly header: EntryHeader;
}

/** The checkpoint found for a query, as `splitIfTruncated` uses it; `settle()` once the query is made. */
export class CheckpointResume implements SplitResume {
  readonly #checkpoint: SplitCheckpoint;
  readonly #init: CheckpointInit;
  readonly #plan: EntryHeader;
  readonly #done: readonly (PartFile | undefined)[];
  #outcome: 'used' | 'refused' | undefined;

  constructor(
    checkpoint: SplitCheckpoint,
    init: CheckpointInit,
    plan: EntryHeader,
    done: readonly (PartFile | undefined)[],
  ) {
    this.#checkpoint = checkpoint;
    this.#init = init;
    this.#plan = plan;
    this.#done = done;
  }

  get queryId(): string {
    return this.#plan.queryId;
  }
  get cappedTotal(): number {
    return this.#plan.split!.cappedTotal;
  }
  get lastDateUpdated(): string {
    return this.#plan.lastDateUpdated;
  }
  get fields(): readonly FieldDescriptor[] {
    return this.#plan.fields;
  }
  get parts(): readonly ResultPart[] {
    return this.#plan.split!.parts;
  }
  /** The first run's `checkTickers` answer, when it asked. */
  get unknownTickers(): readonly string[] | undefined {
    return this.#plan.unknownTickers;
  }
  /** Whether the query went on from the checkpoint. */
  get used(): boolean {
    return this.#outcome === 'used';
  }

  finished(
    index: number,
    template: ResultSource,
    reread: (signal: AbortSignal) => Promise<ResultSource>,
  ): ResultSource | undefined {
    const file = this.#done[index];
    if (template.total === 0) return { ...template, local: { open: () => (async function* () {})() } };
    return file && { ...template, local: this.#checkpoint.partRows(file, reread) };
  }

  markUsed(finished: number): void {
    this.#outcome = 'used';
    const { key, datasetId } = this.#init;
    this.#init.emit({ type: 'resumed', key, datasetId, parts: this.parts.length, finished });
  }

  refused(reason: string): void {
    this.#outcome = 'refused';
    const { key, datasetId } = this.#init;
    this.#init.emit({ type: 'checkpoint-unusable', key, datasetId, reason: `the plan: ${reason}` });
  }

  /** After the query: a checkpoint that could not be used is removed (its parts are another result's). */
  async settle(): Promise<void> {
    if (this.#outcome !== 'used') await this.#checkpoint.remove(this.#plan.split);
  }
}

/** Where a part's rows go while they are read (`undefined` from the opener: not stored). */
interface PartSink {
  write(batch: RecordBatch): Promise<void>;
  commit(): Promise<void>;
  discard(): Promise<void>;
  fail(err: Error): void;
}

/** Cuts the batches of a split result's service runs at the parts' bounds and stores each part. */
export class PartFiller {
  readonly #source: ResultSource;
  readonly #open: (part: ResultPart) => Promise<PartSink | undefined>;
  readonly #sinks = new Map<number, { sink: PartSink | undefined; rows: number }>();

  constructor(source: ResultSource, open: (part: ResultPart) => Promise<PartSink | undefined>) {
    this.#source = source;
    this.#open = open;
  }

  /** `batch` holds rows `firstRow..` of the whole. */
  async feed(batch: RecordBatch, firstRow: number): Promise<void> {
    const parts = this.#source.split!.parts;
    let row = firstRow;
    let offset = 0;
    while (offset < batch.numRows) {
      const i = parts.findIndex((p) => row >= p.firstRow && row < p.firstRow + p.total);
      if (i < 0) return;
      const part = parts[i]!;
      const n = Math.min(batch.numRows - offset, part.firstRow + part.total - row);
      let state = this.#sinks.get(i);
      if (!state) {
        state = { sink: await this.#open(part), rows: 0 };
        this.#sinks.set(i, state);
      }
      const sink = state.sink;
      try {
        if (sink)
          await sink.write(offset === 0 && n === batch.numRows ? batch : batch.slice(offset, offset + n));
        state.rows += n;
        if (sink && state.rows === part.total) {
          state.sink = undefined;
          await sink.commit();
        }
      } catch (err) {
        state.sink = undefined;
        await sink?.discard();
        sink?.fail(err as Error);
      }
      offset += n;
      row += n;
    }
  }

  /** Removes the files of parts not finished (the stream ended early). */
  async close(): Promise<void> {
    for (const state of this.#sinks.values()) await state.sink?.discard();
    this.#sinks.clear();
  }
}

/**
 * An inner stream's Arrow batches with the progress marks they complete, its rows counted from `firstRow`
 * of the whole and its pages and bytes after `before`'s.
 */
export async function* batchSteps(
  inner: ResultStream,
  firstRow: number,
  before: { pages: number; bytes: number } = { pages: 0, bytes: 0 },
): AsyncGenerator<BatchStep> {
  const marks: LocalMark[] = [];
  inner.on('progress', (e) => {
    marks.push({
      end: firstRow + e.rows,
      pages: before.pages + e.pages,
      bytes: before.bytes + e.bytes,
      source: 'service',
    });
  });
  try {
    for await (const chunk of inner) yield { batches: [chunk as RecordBatch], marks: marks.splice(0) };
  } finally {
    if (!inner.destroyed) inner.destroy();
  }
}
