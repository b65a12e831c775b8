import { MediaType } from '../../core/wire.js';
import type { DatasetDefinition } from '../datasets/index.js';
import { CONTENT_TYPES, pageWriter } from '../formats/index.js';
import { capText, quote } from '../messages.js';
import { negotiate } from '../negotiate.js';
import { checkQueryBody, computeQueryId } from '../query-body.js';
import type { StoredQuery } from '../query-store.js';
import { errorReply, HSTS, jsonReply, type Reply } from '../reply.js';
import { pageRowCount, planResult, planRowChunks } from '../rows.js';
import type { RouteRequest, ServiceState } from './context.js';

const QUERY_ID = /^[0-9a-f]{64}$/;

/** `POST /datasets/<id>/query/` */
export async function createQuery(
  dataset: DatasetDefinition,
  req: RouteRequest,
  state: ServiceState,
): Promise<Reply> {
  const read = await req.readBody();
  if (!read.ok) {
    return { ...errorReply(413, `request body exceeds ${state.options.maxBodyBytes} bytes`), close: true };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(read.body.toString('utf8'));
  } catch (err) {
    return errorReply(
      400,
      `body is not valid JSON: ${capText(err instanceof Error ? err.message : String(err))}`,
    );
  }
  const checked = checkQueryBody(parsed);
  if (!checked.ok) return errorReply(400, checked.message);
  const { seed, rowCap, bigIntegers } = state.options;
  const id = computeQueryId(dataset.id, checked.body, checked.tickers);
  const query = state.queries.getOrCreate(id, () => ({
    dataset,
    plan: planResult(dataset, checked.tickers, seed, rowCap, bigIntegers),
  }));
  const running = state.queries.stateOf(query) === 'running';
  return jsonReply(200, {
    id,
    state: running ? 'running' : 'complete',
    total: running ? 0 : query.plan.total,
    formats: dataset.formats.map((f) => MediaType[f]),
  });
}

/** Looks up `<query_id>` of `dataset`: 400 when malformed, 404 when unknown. */
export function findQuery(dataset: DatasetDefinition, id: string, state: ServiceState): StoredQuery | Reply {
  if (!QUERY_ID.test(id)) return errorReply(400, 'query id must be 64 lower-case hex characters');
  const query = state.queries.get(id);
  if (!query || query.dataset !== dataset)
    return errorReply(404, `unknown query ${id} in dataset ${dataset.id}`);
  return query;
}

/** X-State, X-Total, X-Truncated, X-Formats: on every response about an existing query. */
function queryHeaders(query: StoredQuery, state: ServiceState): Record<string, string> {
  const running = state.queries.stateOf(query) === 'running';
  return {
    ...HSTS,
    'X-State': running ? 'running' : 'complete',
    'X-Total': String(running ? 0 : query.plan.total),
    'X-Truncated': String(!running && query.plan.truncated),
    // Comma without a space; readers should split on "," and trim.
    'X-Formats': query.dataset.formats.map((f) => MediaType[f]).join(','),
  };
}

/** `HEAD /datasets/<id>/query/<qid>`: the check. Always `application/json`, as the spec's sample. */
export function checkQuery(query: StoredQuery, state: ServiceState): Reply {
  const running = state.queries.stateOf(query) === 'running';
  return {
    status: running ? state.options.runningStatus : 200,
    headers: { ...queryHeaders(query, state), 'Content-Type': 'application/json' },
    body: null,
  };
}

function positiveInteger(name: string, raw: string | undefined, fallback: number): number | string {
  if (raw === undefined) return fallback;
  const value = /^[0-9]{1,16}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < 1) {
    return `${name} must be an integer between 1 and ${Number.MAX_SAFE_INTEGER}, got ${quote(raw)}`;
  }
  return value;
}

/** Pages of at most this many rows cost one slice and little memory: never shed. */
export const SMALL_PAGE_ROWS = 1024;

/**
 * Load shedding: a page to build is admitted while the rows of pages in flight (being built or sent) stay
 * within `maxPageRowsInFlight`, or when it is small, or when nothing else is in flight (so a page larger
 * than the bound is served on a quiet emulator). Otherwise `503` with `Retry-After`: the seconds the
 * builder needs for what it has queued, at its measured throughput.
 */
function admitPage(
  rows: number,
  req: RouteRequest,
  state: ServiceState,
  headers: Record<string, string>,
): Reply | undefined {
  const { maxPageRowsInFlight } = state.options;
  const flight = state.pagesInFlight;
  const admit =
    maxPageRowsInFlight === 0 ||
    rows <= SMALL_PAGE_ROWS ||
    flight.rows === 0 ||
    flight.rows + rows <= maxPageRowsInFlight;
  if (!admit) {
    const seconds = Math.min(60, Math.max(1, Math.ceil(state.builder.drainMs() / 1000)));
    flight.shed++;
    return errorReply(
      503,
      `overloaded: ${flight.rows} page rows in flight (bound ${maxPageRowsInFlight}); retry later`,
      { ...headers, 'Retry-After': String(seconds) },
    );
  }
  flight.rows += rows;
  req.onDone(() => {
    flight.rows -= rows;
  });
  return undefined;
}

/** `GET /datasets/<id>/query/<qid>?start&limit`, in the format `Accept` picks. */
export async function readResults(
  query: StoredQuery,
  req: RouteRequest,
  state: ServiceState,
): Promise<Reply> {
  const { options } = state;
  const start = positiveInteger('start', req.query.start, 1);
  if (typeof start === 'string') return errorReply(400, start);
  const limit = positiveInteger('limit', req.query.limit, options.defaultPageSize);
  if (typeof limit === 'string') return errorReply(400, limit);

  const headers = queryHeaders(query, state);
  const { dataset, plan } = query;
  const format = negotiate(req.headers.accept, dataset.formats);
  if (format === undefined) {
    const offered = dataset.formats.map((f) => MediaType[f]).join(', ');
    return errorReply(
      406,
      `Accept ${quote(req.headers.accept ?? '')} names no format this query offers; offered: ${offered}`,
      headers,
    );
  }
  if (state.queries.stateOf(query) === 'running') {
    return errorReply(
      409,
      `query ${query.id} is still running; check it with HEAD until X-State is complete`,
      headers,
    );
  }

  const key = `${query.id}|${format}|${start}|${limit}`;
  // Larger limits are clamped: the page echoes `limit`, `count` says what came.
  const rows = Math.min(limit, options.maxPageSize);
  const count = pageRowCount(plan, start - 1, rows);
  let body = state.pages.peek(key);
  if (body === undefined) {
    const shed = admitPage(count, req, state, headers);
    if (shed) return shed;
    const meta = {
      id: query.id,
      state: 'complete' as const,
      total: plan.total,
      start,
      limit,
      count,
      fields: dataset.fields,
      lastDateUpdated: dataset.lastDateUpdated,
    };
    const built = state.builder.build(
      key,
      count,
      () => pageWriter(format, meta),
      () => planRowChunks(plan, start - 1, rows),
      req.signal,
    );
    body = await built;
    state.pages.set(key, body);
  }
  return {
    status: 200,
    headers: { ...headers, 'Content-Type': CONTENT_TYPES[format] },
    body,
    cacheKey: key,
    rows: count,
  };
}
