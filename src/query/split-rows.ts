/**
 * The rows of a split result (`split: true`) as one stream: part after part in the order of the parts,
 * each part's rows in the service's order, each part read by the page engine like any result. The parts
 * were checked to have one schema before the first row (split.ts), so every batch is re-labelled with the
 * schema the stream announced; rows are neither added nor dropped, and `startRow` counts across parts.
 */
import type { RecordBatch } from 'apache-arrow';
import { RecordBatchBuilder } from '../convert/index.js';
import { Pending } from '../convert/rebatch.js';
import { ProtocolError } from '../core/errors.js';
import type { LocalMark, LocalReadContext, LocalRows, LocalStep, ResultSource } from './result-source.js';
import { ResultStream } from './result-stream.js';
import { SharedDictionaries } from './split-dictionaries.js';
import type { ResultPart } from './split-info.js';

export type { ResultPart, SplitInfo } from './split-info.js';

/** A part ready to be read: what it is, and its result. */
export interface ReadablePart {
  readonly part: ResultPart;
  readonly source: ResultSource;
}

/** Row objects handed on at a time. */
const ROW_SLICE = 1000;

export class SplitRows implements LocalRows {
  readonly #parts: readonly ReadablePart[];

  constructor(parts: readonly ReadablePart[]) {
    this.#parts = parts;
  }

  open(ctx: LocalReadContext): AsyncIterable<LocalStep> {
    return this.#read(ctx);
  }

  async *#read(ctx: LocalReadContext): AsyncGenerator<LocalStep> {
    const { options } = ctx;
    let pages = 0;
    let bytes = 0;
    let rows = 0;
    // A `batchSize` holds across parts (batches of exactly that many rows but the last, as one query's
    // and as the cache serves them); unset, a batch is a page of a part.
    const pending =
      options.output === 'arrow' && !options.batchSizeAuto ? new Pending(options.batchSize) : undefined;
    // One dictionary per column across parts (each part's builder starts its own).
    const dictionaries = new SharedDictionaries(ctx.schema);
    const relabel = (batch: RecordBatch) => dictionaries.relabel(batch);
    for (const { part, source } of this.#parts) {
      const last = part.firstRow + part.total - 1;
      if (part.total === 0 || last < options.startRow) continue;
      const from = Math.max(1, options.startRow - part.firstRow + 1);
      const inner = new ResultStream(async () => source, {
        ...options,
        startRow: from,
        // The outer stream announced (or refused) the truncation of the whole.
        onTruncated: 'warn',
        signal: ctx.signal,
      });
      inner.on('retry', ctx.retry);
      const marks: LocalMark[] = [];
      const pagesBefore = pages;
      const bytesBefore = bytes;
      inner.on('progress', (e) => {
        pages = pagesBefore + e.pages;
        bytes = bytesBefore + e.bytes;
        marks.push({ end: part.firstRow + from - 1 + e.rows, pages, bytes, source: 'service' });
      });
      let read = 0;
      // Row objects go on a slice at a time (a step per row would cost more than the row).
      let objects: Record<string, unknown>[] = [];
      try {
        for await (const chunk of inner) {
          if (options.output === 'rows') {
            read++;
            objects.push(chunk as Record<string, unknown>);
            if (objects.length >= ROW_SLICE || marks.length > 0) {
              yield { chunks: objects, marks: marks.splice(0) };
              objects = [];
            }
            continue;
          }
          const batch = chunk as RecordBatch;
          read += batch.numRows;
          // A part's empty batch only carries its schema: the split result's comes once, at the end.
          if (batch.numRows === 0) continue;
          // Marks may go with earlier rows: the stream reports each once its end has been read.
          const shared = relabel(batch);
          const chunks = pending ? [...pending.add(shared)] : [shared];
          yield { chunks, marks: marks.splice(0) };
        }
        if (objects.length > 0) yield { chunks: objects, marks: marks.splice(0) };
      } finally {
        if (!inner.destroyed) inner.destroy();
      }
      // The part's rows were counted when it was split: fewer or more now would lose or repeat rows.
      const expected = part.total - from + 1;
      if (read !== expected) {
        throw new ProtocolError(
          `part ${part.tickers.join(',')} of the split result (query ${part.queryId}) gave ${read} rows from row ${from}, its total says ${expected}`,
        );
      }
      rows += read;
    }
    const rest = pending?.rest();
    if (rest) yield { chunks: [rest] };
    if (rows === 0 && options.output === 'arrow') {
      yield { chunks: [new RecordBatchBuilder(ctx.plan, { onInvalid: options.onInvalid }).flush()] };
    }
  }
}
