/**
 * What a result stream reads from: a completed query (`ResultInfo`, public through `QueryResult`) and,
 * internal to the library, how to reach its pages (`ResultSource`). The result cache plugs in here as a
 * `LocalRows`: the one extension point of the page engine. Nothing in this module is exported from the
 * package's index: these are the engine's contracts with the client and the cache.
 */
import type { Schema } from 'apache-arrow';
import type { Chunk, ColumnPlan } from '../convert/index.js';
import type { FieldDescriptor } from '../core/wire.js';
import type { PageTransport } from '../transport/endpoints.js';
import type { RetryEvent } from '../transport/retry.js';
import type { PageRange } from './page-plan.js';
import type { RequestScheduler } from './scheduler.js';
import type { SplitInfo } from './split-info.js';
import type { NormalizedStreamOptions } from './stream-options.js';

/** A completed query, as its first answers described it. */
export interface ResultInfo {
  readonly datasetId: string;
  /** The query id (64 lower-case hex). */
  readonly id: string;
  /** Rows in the result (at most the row cap). */
  readonly total: number;
  /** True when the service cut the result at the row cap. */
  readonly truncated: boolean;
  /** Media types the result can be read in. */
  readonly formats: readonly string[];
  /** The column descriptors, in row-value order. */
  readonly fields: readonly FieldDescriptor[];
  /** `last_date_updated` of the result's pages, when known (the result cache compares it). */
  readonly lastDateUpdated?: string | undefined;
}

/** A completed query and how its pages are reached. */
export interface ResultSource extends ResultInfo {
  readonly pages: PageTransport;
  /** The client's shared scheduler for `concurrency: 'auto'` streams. */
  readonly scheduler?: RequestScheduler | undefined;
  /** The page read with the query, handed to the first stream that can use it (once). */
  readonly takeFirstPage?: (() => KeptPage | undefined) | undefined;
  /** Rows from somewhere else than the page engine (the result cache, a split result's parts). */
  readonly local?: LocalRows | undefined;
  /** Set for a result of `split: true` read in parts. */
  readonly split?: SplitInfo | undefined;
  /**
   * A split result's parts, in the order their rows come: each a result of its own, whose row 1 is row
   * `firstRow` of the whole. The page engine reads them as one run of pages.
   */
  readonly parts?: readonly SourcePart[] | undefined;
}

/** A part of a split result, as the page engine reads it. */
export interface SourcePart {
  readonly firstRow: number;
  readonly source: ResultSource;
}

/** A table-JSON page already read whole with the query (its descriptors described the result). */
export interface KeptPage {
  /** The rows it holds. */
  readonly range: PageRange;
  /** Its decoded body. */
  readonly bytes: Buffer;
  /** Bytes the body took on the wire. */
  readonly wireBytes: number;
  readonly codings: readonly string[];
  /** The request it answered, for errors. */
  readonly info: { readonly method: string; readonly url: string };
  /** From sending its request to its response headers, in ms (what the service took to answer it). */
  readonly waitMs?: number | undefined;
  /** From its response headers to its body's last byte, in ms. */
  readonly bodyMs?: number | undefined;
}

/** A stream's progress mark for rows a `LocalRows` produced: `end` is the row after them. */
export interface LocalMark {
  readonly end: number;
  readonly pages: number;
  readonly bytes: number;
  readonly source: 'service' | 'cache';
}

/** Output chunks, and the progress marks they complete. */
export interface LocalStep {
  readonly chunks: readonly Chunk[];
  readonly marks?: readonly LocalMark[] | undefined;
}

export interface LocalReadContext {
  readonly options: NormalizedStreamOptions;
  readonly plan: readonly ColumnPlan[];
  /** The schema the stream announced: every Arrow chunk must carry it. */
  readonly schema: Schema;
  readonly signal: AbortSignal;
  readonly retry: (event: RetryEvent) => void;
}

/**
 * A source that makes its own chunks (the result cache serves an entry, or fills one while reading the
 * service). The stream still owns everything the consumer sees around them: `'schema'`, `'truncated'`,
 * `'progress'`, checkpoints, backpressure, abort.
 */
export interface LocalRows {
  /** This stream's chunks, or `undefined` to read the service through the page engine as usual. */
  open(context: LocalReadContext): AsyncIterable<LocalStep> | undefined;
}
