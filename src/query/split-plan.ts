/**
 * The bisection of `split: true`: a ticker list whose result the service truncated at its row cap is cut
 * in halves, and each half again while its own result is truncated, until every part fits (or is a single
 * ticker, which nothing can narrow further: the spec filters a query by tickers and nothing else).
 *
 * Requests: each part asked about costs one POST (the query of its tickers), the HEADs of a wait while it
 * runs, and one HEAD when the POST answered `complete` with a total that reaches the cap (the handle has
 * no `truncated`; a total below the cap cannot have been cut, since a cut result reports the cap itself).
 * A list of n tickers whose parts end as p leaves asks about 2p - 2 parts below the whole (a full binary
 * tree), never one query per ticker unless every ticker needs one.
 */
import PQueue from 'p-queue';
import type { QueryHandle, QueryStatus } from '../core/wire.js';
import type { CompletedQuery } from './wait.js';

/** What the bisection asks the service: the client's query lifecycle for one list of tickers. */
export interface SplitService {
  /** Creates the query of `tickers` (the body's other members kept) and waits until it is complete. */
  createAndWait(tickers: readonly string[], signal: AbortSignal): Promise<CompletedQuery>;
  /** The HEAD of a complete query: its total and whether it was cut. */
  checkQuery(queryId: string, signal: AbortSignal): Promise<QueryStatus>;
}

/** A part the bisection settled on: its tickers and its complete query. */
export interface PlannedPart {
  readonly tickers: readonly string[];
  /** The part's query, complete (`state` and `total` as its last check said). */
  readonly handle: QueryHandle;
  readonly total: number;
  /** True only for a single ticker whose rows alone pass the cap. */
  readonly truncated: boolean;
}

export interface BisectOptions {
  /** The row cap, as the truncated whole reported it (its total). */
  readonly cap: number;
  /** Parts asked about at once. @default 4 */
  readonly concurrency?: number;
  readonly signal?: AbortSignal | undefined;
}

/**
 * The parts of `tickers` (a list whose result was truncated), in list order: left half before right half
 * at every level, so the parts' tickers concatenated are the list. The first failure aborts the requests
 * still in flight and is thrown.
 */
export async function bisect(
  service: SplitService,
  tickers: readonly string[],
  options: BisectOptions,
): Promise<PlannedPart[]> {
  const controller = new AbortController();
  const user = options.signal;
  const onAbort = () => controller.abort(user!.reason);
  if (user?.aborted) onAbort();
  else user?.addEventListener('abort', onAbort, { once: true });
  // Queries being created or waited for at once; a failure drops those not started.
  const probes = new PQueue({ concurrency: Math.max(1, options.concurrency ?? 4) });
  const signal = controller.signal;

  const probe = (list: readonly string[]): Promise<PlannedPart> =>
    probes.add(async () => {
      signal.throwIfAborted();
      const { handle, status } = await service.createAndWait(list, signal);
      // Waited for: the last HEAD said it all. Complete at once: only a total at the cap can be cut.
      const checked =
        status ?? (handle.total >= options.cap ? await service.checkQuery(handle.id, signal) : undefined);
      const total = checked?.total ?? handle.total;
      const complete: QueryHandle = { ...handle, state: 'complete', total };
      return { tickers: list, handle: complete, total, truncated: checked?.truncated ?? false };
    });
  const split = async (list: readonly string[]): Promise<PlannedPart[]> => {
    const middle = Math.ceil(list.length / 2);
    const halves = [list.slice(0, middle), list.slice(middle)];
    const done = await Promise.all(
      halves.map(async (half) => {
        const part = await probe(half);
        return part.truncated && half.length > 1 ? split(half) : [part];
      }),
    );
    return done.flat();
  };
  try {
    return tickers.length > 1 ? await split(tickers) : [];
  } catch (err) {
    controller.abort(err);
    probes.clear();
    throw err;
  } finally {
    user?.removeEventListener('abort', onAbort);
  }
}
