/**
 * What the engine tells telemetry, and nothing about OpenTelemetry: the query lifecycle and the page
 * engine call these few hooks (a query starts and ends, a phase runs, a read starts, a page is fetched)
 * and the implementation (otel-query.ts) turns them into spans and metrics. When telemetry is off or
 * `@opentelemetry/api` is not installed there is no object to call: every hook is an optional call.
 */
import type { EventEmitter } from 'node:events';
import type { DqsError } from '../core/errors.js';

/** A part of a query's lifecycle, traced as a child span of the query's. */
export type QueryPhase = 'create' | 'wait' | 'first_page';

/**
 * What telemetry reads of a retry (the transport's `RetryEvent`). Telemetry names only what it reads,
 * here and below, so that it sits under the transport and the engine and imports neither.
 */
export interface RetryLike {
  readonly attempt: number;
  readonly delayMs: number;
  readonly error: DqsError;
}

/** What telemetry reads of a page the engine fetched. */
export interface FetchedPage {
  readonly rowCount: number;
  readonly requests: number;
  readonly wireBytes: number;
  /** Decoded body bytes. */
  readonly bytes: number;
}

/** Fetches one planned page (the page engine's `fetchPage`): its context, range, signal and the rest. */
export type PageFetch<C, P extends FetchedPage, R extends unknown[]> = (
  ctx: C,
  range: { readonly start: number; readonly limit: number },
  signal: AbortSignal,
  ...rest: R
) => Promise<P>;

export interface QueryDescription {
  readonly id: string;
  readonly total: number;
  readonly truncated: boolean;
}

/** One query's lifecycle: create, wait, first page, and the reads of its result. */
export interface QueryTelemetry {
  /** Runs `fn` with the query's span as the active context (so its requests carry `traceparent`). */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** Runs one phase of the lifecycle as a child span, active while it runs. */
  phase<T>(name: QueryPhase, fn: () => Promise<T>): Promise<T>;
  /** What the service said of the query, once known. */
  described(query: QueryDescription): void;
  /**
   * The lifecycle is over (`error` when it failed). A query read by `client.stream()` ends with its
   * stream's read instead: `end()` without an error is then ignored.
   */
  end(error?: unknown): void;
  /** A read of the result starts (one `ResultStream`); it ends itself when the stream closes. */
  read(stream: ReadableStreamLike, what: ReadDescription): ReadTelemetry;
}

/** The events of a `ResultStream` a read listens to (no dependency on the stream's class). */
export type ReadableStreamLike = EventEmitter & {
  readonly destroyed: boolean;
  readonly errored: Error | null;
  readonly readableEnded: boolean;
  readonly concurrency: number;
};

export interface ReadDescription {
  readonly output: 'arrow' | 'rows';
  readonly startRow: number;
}

/** One read of a result: wraps the page fetch so that each planned page is a child span. */
export interface ReadTelemetry {
  /** `fetch` traced: a span per planned page, the page's requests sent with it active. */
  pages<C, P extends FetchedPage, R extends unknown[]>(fetch: PageFetch<C, P, R>): PageFetch<C, P, R>;
}

/**
 * The query telemetry of a result, kept beside it rather than on it: `ResultSource` is public, and
 * this is no part of its contract.
 */
const ofResult = new WeakMap<object, QueryTelemetry>();

export function attachQueryTelemetry(result: object, telemetry: QueryTelemetry): void {
  ofResult.set(result, telemetry);
}

export function queryTelemetryOf(result: object): QueryTelemetry | undefined {
  return ofResult.get(result);
}

/** Runs `fn` as a phase of the query's span, or simply runs it without telemetry. */
export function inPhase<T>(
  telemetry: QueryTelemetry | undefined,
  name: QueryPhase,
  fn: () => Promise<T>,
): Promise<T> {
  return telemetry ? telemetry.phase(name, fn) : fn();
}

/**
 * Runs a query's lifecycle `fn` under its telemetry (when there is any: `start` resolves to undefined
 * without the package or with `telemetry: false`), and keeps the telemetry beside the result for its reads.
 */
export async function traced<R extends QueryDescription>(
  start: Promise<QueryTelemetry | undefined> | undefined,
  fn: (telemetry: QueryTelemetry | undefined) => Promise<R>,
): Promise<R> {
  const telemetry = await start;
  if (telemetry === undefined) return fn(undefined);
  try {
    const result = await telemetry.run(() => fn(telemetry));
    attachQueryTelemetry(result, telemetry);
    telemetry.described(result);
    telemetry.end();
    return result;
  } catch (err) {
    telemetry.end(err);
    throw err;
  }
}
