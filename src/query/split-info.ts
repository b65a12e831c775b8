/**
 * How a result of `split: true` was split: plain data, on `QueryResult` (`split`, `parts`), in the
 * stream's `'split'` event and in the result source: apart from the page engine, which reads the parts,
 * so that the engine's contracts (result-source.ts) can name it without importing the engine back.
 */
/** One part of a split result. */
export interface ResultPart {
  /** The part's tickers, in the order of the list asked for. */
  readonly tickers: readonly string[];
  /** The part's own query. */
  readonly queryId: string;
  /** Rows of the part. */
  readonly total: number;
  /** True when the service cut this part too: a single ticker whose rows alone pass the row cap. */
  readonly truncated: boolean;
  /** 1-based position of the part's first row in the split result (`startRow` to begin there). */
  readonly firstRow: number;
}

/** How a result was split: on `QueryResult` (`split`, `parts`) and in the stream's `'split'` event. */
export interface SplitInfo {
  /** The parts, in the order their rows are read. */
  readonly parts: readonly ResultPart[];
  /** The whole list's own total, as the service reported it when it truncated it (the row cap). */
  readonly cappedTotal: number;
}
