/**
 * Pages to output chunks, in row order, with the batch policy: Arrow `RecordBatch`es (a batch is a page
 * unless a `batchSize` is set) or row objects (made a slice at a time). One converter per stream; the page
 * engine hands it each page in order and emits what it returns.
 */
import type { RecordBatch } from 'apache-arrow';
import { RecordBatchBuilder } from './batch-builder.js';
import type { DecodedColumns } from './column-data.js';
import { type ConvertiblePage, isDecodedColumns, type MadeRows, partLength } from './page-parts.js';
import type { ColumnPlan } from './plan.js';
import { makeColumnRowFactory, makeRowFactory } from './row-factory.js';

/** One output chunk: a record batch, or one row object. */
export type Chunk = RecordBatch | Record<string, unknown>;

export interface PageConverter {
  /**
   * A page's output, as groups of chunks to emit in order. A page is converted, or at least checked, at
   * once: an invalid value fails here, before any of its rows is emitted.
   */
  page(page: ConvertiblePage): Iterable<Chunk[]>;
  /** What is left once the last page has been converted (a partial batch). */
  finish(): RecordBatch | undefined;
}

export interface ConverterOptions {
  readonly onInvalid: 'error' | 'null';
  /** Rows per Arrow batch; unset (`batchSizeAuto`), a batch is a page. */
  readonly batchSize: number;
  readonly batchSizeAuto: boolean;
  readonly dates: 'date' | 'string';
}

/** Row objects made at a time from decoded columns. */
const ROW_SLICE = 1000;

/**
 * Arrow batches. `recycle` takes back a decoded page's buffers once they are copied (the decoder decodes
 * the next page into them); a page that is exactly one batch gives its buffers to the batch instead.
 */
export function arrowConverter(
  plan: ColumnPlan[],
  options: ConverterOptions,
  recycle: (part: DecodedColumns) => void,
): PageConverter {
  const builder = new RecordBatchBuilder(plan, { onInvalid: options.onInvalid });
  return {
    page(page) {
      const out: Chunk[] = [];
      const { range } = page;
      // Unset, a batch is a page (page sizes change as the stream learns; batches follow them).
      const batchSize = options.batchSizeAuto ? Math.max(1, page.rowCount) : options.batchSize;
      let first = range.start; // result position of the part's first row
      for (const part of page.parts) {
        const n = partLength(part);
        // Row objects are made only for `output: 'rows'` (the engine asks a decoder for them).
        if (isMadeRows(part)) throw new TypeError('row objects cannot be appended to Arrow batches');
        // The common case (a decoded page that is exactly one batch): its buffers become the batch's.
        if (!Array.isArray(part) && builder.length === 0 && n === batchSize) {
          out.push(builder.adoptDecoded(part));
          first += n;
          continue;
        }
        let i = 0;
        while (i < n) {
          const take = Math.min(batchSize - builder.length, n - i);
          if (Array.isArray(part)) {
            builder.appendRows(i === 0 && take === n ? part : part.slice(i, i + take), first + i, range);
          } else builder.appendDecoded(part, i, i + take);
          i += take;
          if (builder.length >= batchSize) out.push(builder.flush());
        }
        // Copied into the builder: the decoder may decode the next page into these buffers.
        if (!Array.isArray(part)) recycle(part);
        first += n;
      }
      return [out];
    },
    finish() {
      return builder.length > 0 ? builder.flush() : undefined;
    },
  };
}

/**
 * Row objects. Wire rows are converted at once (an invalid value fails the page before any of its rows is
 * emitted). Decoded columns cannot fail: their objects are made a slice at a time as the consumer reads,
 * so a page's worth of objects is never alive at once (they would outlive the young generation and make
 * the GC copy them). Row objects a decoder made from the bytes (table JSON) are emitted as they are, a
 * page in one group.
 */
export function rowConverter(
  plan: ColumnPlan[],
  options: ConverterOptions,
  recycle: (part: DecodedColumns) => void,
): PageConverter {
  const dates = options.dates;
  const make = makeRowFactory(plan, { onInvalid: options.onInvalid, dates });
  // Made at the first decoded page (table JSON or CSV through a columnar decoder).
  let fromColumns: ReturnType<typeof makeColumnRowFactory> | undefined;
  return {
    page(page) {
      const { range } = page;
      const jobs: (Chunk[] | DecodedColumns)[] = [];
      let first = range.start;
      for (const part of page.parts) {
        if (Array.isArray(part)) {
          const out: Chunk[] = new Array(part.length);
          for (let i = 0; i < part.length; i++) out[i] = make(part[i]!, first + i, range);
          jobs.push(out);
        } else if (isMadeRows(part)) jobs.push(part.objects);
        else jobs.push(part);
        first += partLength(part);
      }
      return (function* () {
        for (const job of jobs) {
          if (Array.isArray(job)) {
            yield job;
            continue;
          }
          for (let from = 0; from < job.length; from += ROW_SLICE) {
            const out: Chunk[] = [];
            fromColumns ??= makeColumnRowFactory(plan, dates);
            fromColumns(job, from, Math.min(job.length, from + ROW_SLICE), out);
            yield out;
          }
          recycle(job);
        }
      })();
    },
    finish() {
      return undefined;
    },
  };
}

function isMadeRows(part: ConvertiblePage['parts'][number]): part is MadeRows {
  return !Array.isArray(part) && !isDecodedColumns(part);
}
