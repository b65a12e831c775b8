/**
 * What the result cache did, as `'cache'` events of the client: for progress displays, logs and tests.
 * No event carries the API key or anything derived from it but the entry key (a hash).
 */
export type CacheEvent =
  /** An entry will serve the result: `validated` says whether the service was asked (false: `maxAge` mode). */
  | {
      readonly type: 'hit';
      readonly key: string;
      readonly datasetId: string;
      readonly queryId: string;
      readonly validated: boolean;
      readonly fetchedAt: Date;
    }
  /** No entry (or `refresh`): the result is read from the service and stored. */
  | { readonly type: 'miss'; readonly key: string; readonly datasetId: string; readonly refresh: boolean }
  /** An entry no longer matches the service (`reason` says what differs): read again and replaced. */
  | { readonly type: 'stale'; readonly key: string; readonly datasetId: string; readonly reason: string }
  /** An entry failed verification (cut, altered, other format version) or vanished: never served. */
  | { readonly type: 'unreadable'; readonly key: string; readonly reason: string }
  /** A complete result was written to its entry. */
  | {
      readonly type: 'stored';
      readonly key: string;
      readonly datasetId: string;
      readonly queryId: string;
      readonly bytes: number;
    }
  /**
   * A split read (`split: true`) went on from the checkpoint of an earlier run that did not finish: the
   * list was not split again, and `finished` of its `parts` parts were read from their entries.
   */
  | {
      readonly type: 'resumed';
      readonly key: string;
      readonly datasetId: string;
      readonly parts: number;
      readonly finished: number;
    }
  /**
   * The checkpoint of an unfinished split read (or one of its parts' entries) could not be used: `reason`
   * says why; what it held is read from the service.
   */
  | {
      readonly type: 'checkpoint-unusable';
      readonly key: string;
      readonly datasetId: string;
      readonly reason: string;
    }
  /** Least recently used entries were removed to stay within `maxBytes`. */
  | { readonly type: 'evicted'; readonly removed: number; readonly bytes: number }
  /** The cache could not be used (unwritable directory, full disk): the result is served, not stored. */
  | { readonly type: 'error'; readonly key: string | undefined; readonly error: Error }
  /**
   * The cache directory, its `entries/` or its `secret` could be written by someone else (another owner,
   * group- or world-writable, a link or FIFO where a file belongs): the cache is not used for this query,
   * neither read nor filled, and the result is read from the service. `reason` says what is wrong, `fix`
   * how to make the directory usable again (`chmod 700 <dir>`, ...).
   */
  | { readonly type: 'unsafe'; readonly dir: string; readonly reason: string; readonly fix: string };
