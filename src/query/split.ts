/**
 * `split: true`: a truncated result of a ticker list becomes the result of its parts (split-plan.ts says
 * how the list is cut), read by the page engine as one run of pages (`ResultSource.parts`: the next
 * part's pages go out while this one's drain, under the client's one scheduler). Before the first row
 * every part is complete and described: the parts' column descriptors must be the whole list's (else
 * `SplitSchemaError`), and each part's rows are counted, so the split result's total is exact.
 *
 * Order, stated once for the docs: the parts in list order (repeated tickers dropped, first one kept),
 * each part's rows in the service's order for that part's query.
 */
import PQueue from 'p-queue';
import { SplitSchemaError } from '../core/errors.js';
import type { FieldDescriptor, QueryHandle, WireBody } from '../core/wire.js';
import type { EndpointClient } from '../transport/endpoints.js';
import type { ResultInfo, ResultSource, SourcePart } from './result-source.js';
import type { ResultPart, SplitInfo } from './split-info.js';
import { bisect, type PlannedPart, type SplitService } from './split-plan.js';
import { createAndWait, type WaitOptions } from './wait.js';

/** A warning of `split: true` (also a process warning with this `code`, unless the caller handles it). */
export interface SplitWarning {
  /**
   * `DQS_SPLIT_NO_TICKERS`: truncated, and the query names no tickers, so it cannot be split.
   * `DQS_SPLIT_TICKER_OVER_CAP`: one ticker's rows alone pass the row cap; its part is truncated.
   */
  readonly code: 'DQS_SPLIT_NO_TICKERS' | 'DQS_SPLIT_TICKER_OVER_CAP';
  readonly message: string;
  /** The tickers concerned (those over the cap; empty for `DQS_SPLIT_NO_TICKERS`). */
  readonly tickers: readonly string[];
  readonly datasetId: string;
  /** The rows the service returned for the truncated query (or part): its row cap. */
  readonly cap: number;
}

/** What splitting needs of the client: its endpoints, and its lifecycle from an existing handle. */
export interface SplitQuery {
  readonly client: EndpointClient;
  readonly datasetId: string;
  readonly body: WireBody;
  /** How to wait for each part's query (`signal`, `timeoutMs`, polling). */
  readonly wait: WaitOptions;
  /** The result of a part's complete query, described (its first page read) as `client.query()` does. */
  readonly open: (
    body: WireBody,
    handle: QueryHandle,
    signal: AbortSignal | undefined,
  ) => Promise<ResultSource>;
  /** A checkpoint of an earlier read of this query that did not finish (the result cache's). */
  readonly resume?: SplitResume | undefined;
}

/**
 * The plan of an earlier read of the same split query that did not finish, and the parts it finished:
 * kept by the result cache (cache/split-checkpoint.ts), used here only when the whole list's query is
 * still the one that was split (same id, capped total, `last_date_updated` and columns).
 */
export interface SplitResume {
  /** The whole list's query as it was split. */
  readonly queryId: string;
  readonly cappedTotal: number;
  readonly lastDateUpdated: string;
  readonly fields: readonly FieldDescriptor[];
  /** The parts, in list order. */
  readonly parts: readonly ResultPart[];
  /**
   * Part `index` read completely before, as a source that needs no request (its rows are local; it reads
   * the part from the service itself, with `reread`, if they turn out unusable); `undefined`: read it.
   */
  finished(
    index: number,
    template: ResultSource,
    reread: (signal: AbortSignal) => Promise<ResultSource>,
  ): ResultSource | undefined;
  /** Says the plan was used, `finished` of its parts from local rows. */
  markUsed(finished: number): void;
  /** Says why the plan could not be used (the list is split again). */
  refused(reason: string): void;
}

/** Parts created, or opened, at once. */
const CONCURRENCY = 4;

/** The tickers of a body, repeats dropped (a ticker in two parts would give its rows twice). */
function distinctTickers(body: WireBody): string[] {
  return [...new Set(Array.isArray(body?.tickers) ? body.tickers : [])];
}

/**
 * `whole` as it is when it was not truncated or names no tickers; else the result of its parts.
 */
export async function splitIfTruncated(whole: ResultSource, q: SplitQuery): Promise<ResultSource> {
  const tickers = distinctTickers(q.body);
  if (!whole.truncated || tickers.length === 0) return whole;
  const signal = q.wait.signal;
  const service: SplitService = {
    createAndWait: (list, s) =>
      createAndWait(q.client, q.datasetId, { ...q.body, tickers: [...list] }, { ...q.wait, signal: s }),
    checkQuery: (id, s) => q.client.checkQuery(q.datasetId, id, { signal: s }),
  };
  const resumed = q.resume ? await resumeParts(whole, q, tickers, service) : undefined;
  const planned: Planned[] =
    resumed ?? (await bisect(service, tickers, { cap: whole.total, concurrency: CONCURRENCY, signal }));
  // A single ticker cannot be split: the whole is its only part (and is truncated).
  const opening = new PQueue({ concurrency: CONCURRENCY });
  const opened: ResultSource[] =
    planned.length === 0
      ? [whole]
      : await Promise.all(
          planned.map((p) =>
            opening.add(() => p.local ?? q.open({ ...q.body, tickers: [...p.tickers] }, p.handle!, signal)),
          ),
        ).finally(() => opening.clear());
  if (resumed) q.resume!.markUsed(resumed.filter((p) => p.local).length);
  // What the bisection saw decides truncation (the HEAD said it); a lone ticker is the truncated whole.
  const seen = planned.length === 0 ? [{ tickers, truncated: true }] : planned;
  const parts: ResultPart[] = [];
  const sources: SourcePart[] = [];
  let firstRow = 1;
  for (const [i, result] of opened.entries()) {
    const { tickers: list, truncated } = seen[i]!;
    checkSameColumns(q.datasetId, whole.fields, result.fields, list);
    parts.push({ tickers: list, queryId: result.id, total: result.total, truncated, firstRow });
    sources.push({ firstRow, source: result });
    firstRow += result.total;
  }
  const split: SplitInfo = { parts, cappedTotal: whole.total };
  const dates = new Set(opened.map((r) => r.lastDateUpdated));
  return {
    pages: whole.pages,
    datasetId: whole.datasetId,
    id: whole.id,
    total: firstRow - 1,
    truncated: split.parts.some((p) => p.truncated),
    // What every part offers: a format chosen for the split result is readable in each part.
    formats: whole.formats.filter((f) => opened.every((r) => r.formats.includes(f))),
    fields: whole.fields,
    scheduler: whole.scheduler,
    // One date for all parts, or none: a dataset updated while it was split is not one result to cache.
    lastDateUpdated: dates.size === 1 ? whole.lastDateUpdated : undefined,
    parts: sources,
    split,
  };
}

/** A part to read: planned by the bisection, or by a checkpoint (then possibly read already). */
type Planned = Pick<PlannedPart, 'tickers' | 'truncated'> & {
  readonly handle?: QueryHandle;
  /** The part's rows, local (a finished part of the checkpoint): no request. */
  readonly local?: ResultSource | undefined;
};

/**
 * The checkpoint's parts, when its plan is the one of this whole: the finished ones local, the others
 * created again (a POST each, no HEAD: the plan knows which are truncated). `undefined` (and the reason
 * told to the checkpoint) when the whole or a part's query is not what the plan recorded.
 */
async function resumeParts(
  whole: ResultSource,
  q: SplitQuery,
  tickers: readonly string[],
  service: SplitService,
): Promise<Planned[] | undefined> {
  const plan = q.resume!;
  const reason =
    whole.id !== plan.queryId
      ? 'the service gives the query another id'
      : whole.total !== plan.cappedTotal
        ? `the capped total is ${whole.total}, the checkpoint's ${plan.cappedTotal}`
        : whole.lastDateUpdated !== plan.lastDateUpdated
          ? `last_date_updated is ${whole.lastDateUpdated}, the checkpoint's ${plan.lastDateUpdated}`
          : JSON.stringify(whole.fields) !== JSON.stringify(plan.fields)
            ? 'the column descriptors changed'
            : JSON.stringify(plan.parts.flatMap((p) => p.tickers)) !== JSON.stringify(tickers)
              ? "the checkpoint's parts are not this list's"
              : undefined;
  if (reason !== undefined) {
    plan.refused(reason);
    return undefined;
  }
  const signal = q.wait.signal ?? new AbortController().signal;
  const probes = new PQueue({ concurrency: CONCURRENCY });
  // A part's query created again and waited for: complete, with the total its wait gave.
  const created = async (list: readonly string[], s: AbortSignal): Promise<QueryHandle> => {
    const { handle, status } = await service.createAndWait(list, s);
    return { ...handle, state: 'complete', total: status?.total ?? handle.total };
  };
  const reread = (list: readonly string[]) => async (s: AbortSignal) =>
    q.open({ ...q.body, tickers: [...list] }, await created(list, s), s);
  try {
    return await Promise.all(
      plan.parts.map((part, i) =>
        probes.add(async (): Promise<Planned> => {
          const template: ResultSource = {
            pages: whole.pages,
            datasetId: whole.datasetId,
            id: part.queryId,
            total: part.total,
            truncated: part.truncated,
            formats: whole.formats,
            fields: whole.fields,
            scheduler: whole.scheduler,
            lastDateUpdated: whole.lastDateUpdated,
          };
          const local = plan.finished(i, template, reread(part.tickers));
          if (local) return { tickers: part.tickers, truncated: part.truncated, local };
          const handle = await created(part.tickers, signal);
          if (handle.id !== part.queryId || handle.total !== part.total) {
            throw new StalePlan(`the part of ${part.tickers.join(', ')} is not the checkpoint's any more`);
          }
          return {
            tickers: part.tickers,
            truncated: part.truncated,
            handle,
          };
        }),
      ),
    );
  } catch (err) {
    probes.clear();
    if (!(err instanceof StalePlan)) throw err;
    plan.refused(err.message);
    return undefined;
  }
}

class StalePlan extends Error {}

/** The first difference between the whole's descriptors and a part's, as a phrase; throws it. */
function checkSameColumns(
  datasetId: string,
  whole: readonly FieldDescriptor[],
  part: readonly FieldDescriptor[],
  tickers: readonly string[],
): void {
  if (JSON.stringify(whole) === JSON.stringify(part)) return;
  let difference: string;
  if (whole.length !== part.length) {
    difference = `has ${part.length} columns, the whole list's query ${whole.length}`;
  } else {
    const i = whole.findIndex((f, j) => JSON.stringify(f) !== JSON.stringify(part[j]));
    difference =
      whole[i]!.id === part[i]!.id
        ? `describes column ${i + 1} (${whole[i]!.id}) otherwise`
        : `has column ${i + 1} ${part[i]!.id}, the whole list's query ${whole[i]!.id}`;
  }
  throw new SplitSchemaError(datasetId, tickers, difference);
}

/**
 * The warnings a result of `split: true` calls for, whether it was just split or served from the cache:
 * a truncated result without tickers (it could not be split), and parts still truncated (a ticker alone
 * over the cap). Given `onWarning` (the CLI's wording), that is called instead of a process warning.
 */
export function reportSplit(
  datasetId: string,
  body: WireBody,
  result: Pick<ResultInfo, 'truncated' | 'total'> & Pick<ResultSource, 'split'>,
  onWarning: ((warning: SplitWarning) => void) | undefined,
): void {
  const warn = (warning: SplitWarning) => {
    if (onWarning) onWarning(warning);
    else process.emitWarning(warning.message, { code: warning.code });
  };
  if (!result.truncated) return;
  if (!result.split) {
    if (distinctTickers(body).length > 0) return;
    warn({
      code: 'DQS_SPLIT_NO_TICKERS',
      tickers: [],
      datasetId,
      cap: result.total,
      message: `the result of ${datasetId} is truncated at ${result.total} rows and cannot be split: the service filters a query by tickers only, and this query names none; pass \`tickers\` to read every row in parts that fit`,
    });
    return;
  }
  const over = result.split.parts.filter((p) => p.truncated);
  const names = over.flatMap((p) => p.tickers);
  const each = over.length === 1 ? `${names[0]} alone passes` : `${names.join(', ')} each pass`;
  warn({
    code: 'DQS_SPLIT_TICKER_OVER_CAP',
    tickers: names,
    datasetId,
    cap: over[0]!.total,
    message: `${each} the row cap of ${datasetId} (${over[0]!.total} rows): ${over.length === 1 ? 'its part is' : 'their parts are'} truncated, the only truncated ${over.length === 1 ? 'part' : 'parts'} of ${result.split.parts.length}; a single ticker cannot be split further`,
  });
}
