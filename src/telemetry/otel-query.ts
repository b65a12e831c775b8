/**
 * The telemetry hooks on `@opentelemetry/api`: a `dqs.query` span per query with its phases (`dqs.create`,
 * `dqs.wait`, `dqs.first_page`) and reads (`dqs.read`) as children, a `dqs.page` span per planned page
 * under its read, and the metrics of instruments.ts. Retries reach the span they happened under through
 * the active context (a `Tally` stored in it), as the transport reports them without knowing the query.
 */
import type { Attributes, Context, Span as OtelSpan, Tracer } from '@opentelemetry/api';
import { DqsError, HttpError } from '../core/errors.js';
import { redactSecrets } from '../core/redact.js';
import { VERSION } from '../core/version.js';
import { type Instruments, instruments } from './instruments.js';
import type { Otel } from './load.js';
import { Attr, Event, SCOPE, Span } from './names.js';
import type {
  FetchedPage,
  PageFetch,
  QueryDescription,
  QueryPhase,
  QueryTelemetry,
  ReadableStreamLike,
  ReadDescription,
  ReadTelemetry,
  RetryLike,
} from './telemetry.js';

/** What happened under one span: retries and 429s, counted by the retry hook and by the pages. */
class Tally {
  retries = 0;
  rateLimited = 0;
  rows = 0;
  pages = 0;
  requests = 0;
  wireBytes = 0;
  decodedBytes = 0;

  add(other: Tally): void {
    this.retries += other.retries;
    this.rateLimited += other.rateLimited;
    this.rows += other.rows;
    this.pages += other.pages;
    this.requests += other.requests;
    this.wireBytes += other.wireBytes;
    this.decodedBytes += other.decodedBytes;
  }

  attributes(): Attributes {
    return {
      [Attr.rows]: this.rows,
      [Attr.pages]: this.pages,
      [Attr.requests]: this.requests,
      [Attr.wireBytes]: this.wireBytes,
      [Attr.decodedBytes]: this.decodedBytes,
      [Attr.retries]: this.retries,
      [Attr.rateLimited]: this.rateLimited,
    };
  }
}

const PHASE_SPANS: Record<QueryPhase, string> = {
  create: Span.create,
  wait: Span.wait,
  first_page: Span.firstPage,
};

/** The per-process parts: the API, the tracer (a proxy of the global provider's), the tallies' key. */
export interface TracingBase {
  readonly otel: Otel;
  readonly tracer: Tracer;
  readonly tallyKey: symbol;
}

export function tracingBase(otel: Otel): TracingBase {
  return {
    otel,
    tracer: otel.trace.getTracer(SCOPE, VERSION),
    tallyKey: otel.createContextKey('dqs-client tally'),
  };
}

/** A client's tracing: the per-process parts and the service's address, for every query span. */
export class OtelTracing {
  readonly otel: Otel;
  readonly tracer: Tracer;
  readonly tallyKey: symbol;
  readonly server: Attributes;

  constructor(base: TracingBase, server: Attributes) {
    this.otel = base.otel;
    this.tracer = base.tracer;
    this.tallyKey = base.tallyKey;
    this.server = server;
  }

  query(datasetId: string, endsWithRead: boolean): QueryTelemetry {
    return new OtelQuery(this, datasetId, endsWithRead);
  }

  /** A retry reported by the transport: counted, and an event on the span it happened under. */
  retry(event: RetryLike): void {
    const { otel } = this;
    const active = otel.context.active();
    const status = event.error instanceof HttpError ? event.error.status : undefined;
    const attributes: Attributes = { [Attr.errorType]: event.error.code };
    if (status !== undefined) attributes[Attr.httpStatus] = status;
    // Only under one of our spans (a tally in the context): an application's own span, active around a
    // `listDatasets()`, gets no events from us.
    const tally = active.getValue(this.tallyKey) as Tally | undefined;
    if (tally) {
      tally.retries++;
      if (status === 429) tally.rateLimited++;
      otel.trace.getSpan(active)?.addEvent(Event.retry, {
        ...attributes,
        [Attr.retryAttempt]: event.attempt,
        [Attr.retryDelay]: Math.round(event.delayMs),
      });
    }
    const metrics = instruments(otel);
    metrics.retries.add(1, attributes);
    if (status === 429) metrics.rateLimited.add(1, attributes);
  }

  /** Ends `span` as failed: `error.type` is the error's code, the status its (redacted) message. */
  fail(span: OtelSpan, error: unknown): void {
    const type = errorType(error);
    span.setAttribute(Attr.errorType, type);
    span.setStatus({ code: this.otel.SpanStatusCode.ERROR, message: redactSecrets(messageOf(error)) });
  }
}

class OtelQuery implements QueryTelemetry {
  readonly #t: OtelTracing;
  readonly #span: OtelSpan;
  readonly #context: Context;
  readonly #tally = new Tally();
  readonly #metrics: Instruments;
  readonly #base: Attributes;
  readonly #startedAt = performance.now();
  readonly #endsWithRead: boolean;
  #ended = false;

  constructor(t: OtelTracing, datasetId: string, endsWithRead: boolean) {
    this.#t = t;
    this.#endsWithRead = endsWithRead;
    this.#metrics = instruments(t.otel);
    this.#base = { [Attr.dataset]: datasetId };
    const parent = t.otel.context.active();
    this.#span = t.tracer.startSpan(
      Span.query,
      { kind: t.otel.SpanKind.INTERNAL, attributes: { ...this.#base, ...t.server } },
      parent,
    );
    this.#context = t.otel.trace.setSpan(parent, this.#span).setValue(t.tallyKey, this.#tally);
  }

  get context(): Context {
    return this.#context;
  }

  get tracing(): OtelTracing {
    return this.#t;
  }

  get metrics(): Instruments {
    return this.#metrics;
  }

  get base(): Attributes {
    return this.#base;
  }

  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.#t.otel.context.with(this.#context, fn);
  }

  async phase<T>(name: QueryPhase, fn: () => Promise<T>): Promise<T> {
    const { otel, tracer } = this.#t;
    const span = tracer.startSpan(PHASE_SPANS[name], { attributes: this.#base }, this.#context);
    try {
      return await otel.context.with(otel.trace.setSpan(this.#context, span), fn);
    } catch (err) {
      this.#t.fail(span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  described(query: QueryDescription): void {
    this.#span.setAttributes({
      [Attr.queryId]: query.id,
      [Attr.total]: query.total,
      [Attr.truncated]: query.truncated,
    });
  }

  end(error?: unknown): void {
    if (error === undefined && this.#endsWithRead) return;
    this.#finish(error);
  }

  /** A read of this query's result ended: for a `client.stream()` query, so does the query. */
  readEnded(tally: Tally, error: unknown, concurrency: Attributes): void {
    if (!this.#endsWithRead || this.#ended) return;
    this.#tally.add(tally);
    this.#span.setAttributes(concurrency);
    this.#finish(error);
  }

  #finish(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    // A `client.query()` span has no rows of its own (its reads come later, as children): only what
    // its own requests met.
    this.#span.setAttributes(
      this.#endsWithRead
        ? this.#tally.attributes()
        : { [Attr.retries]: this.#tally.retries, [Attr.rateLimited]: this.#tally.rateLimited },
    );
    const attributes = { ...this.#base };
    if (error !== undefined) {
      this.#t.fail(this.#span, error);
      attributes[Attr.errorType] = errorType(error);
    }
    this.#span.end();
    this.#metrics.queryDuration.record((performance.now() - this.#startedAt) / 1000, attributes);
  }

  read(stream: ReadableStreamLike, what: ReadDescription): ReadTelemetry {
    return new OtelRead(this, stream, what);
  }
}

class OtelRead implements ReadTelemetry {
  readonly #query: OtelQuery;
  readonly #span: OtelSpan;
  readonly #context: Context;
  readonly #tally = new Tally();
  #maxConcurrency: number;
  #ended = false;

  constructor(query: OtelQuery, stream: ReadableStreamLike, what: ReadDescription) {
    this.#query = query;
    const { otel, tracer } = query.tracing;
    this.#span = tracer.startSpan(
      Span.read,
      { attributes: { ...query.base, [Attr.output]: what.output, [Attr.startRow]: what.startRow } },
      query.context,
    );
    this.#context = otel.trace
      .setSpan(query.context, this.#span)
      .setValue(query.tracing.tallyKey, this.#tally);
    this.#maxConcurrency = stream.concurrency;
    query.metrics.concurrency?.record(stream.concurrency, query.base);
    const onChange = (change: { limit: number; reason: string }) => {
      this.#maxConcurrency = Math.max(this.#maxConcurrency, change.limit);
      this.#span.addEvent(Event.concurrency, {
        [Attr.concurrency]: change.limit,
        [Attr.concurrencyReason]: change.reason,
      });
      query.metrics.concurrency?.record(change.limit, query.base);
    };
    const onClose = () => {
      stream.off('concurrency', onChange);
      this.#end(stream);
    };
    stream.on('concurrency', onChange);
    // A stream destroyed while its query was being made has closed already (or is about to).
    if (stream.destroyed) queueMicrotask(onClose);
    else stream.once('close', onClose);
  }

  pages<C, P extends FetchedPage, R extends unknown[]>(fetch: PageFetch<C, P, R>): PageFetch<C, P, R> {
    return (ctx, range, signal, ...rest) => this.#page(() => fetch(ctx, range, signal, ...rest), range);
  }

  async #page<P extends FetchedPage>(
    fetch: () => Promise<P>,
    range: { readonly start: number; readonly limit: number },
  ): Promise<P> {
    const query = this.#query;
    const { otel, tracer, tallyKey } = query.tracing;
    const tally = new Tally();
    const span = tracer.startSpan(
      Span.page,
      {
        kind: otel.SpanKind.CLIENT,
        attributes: { ...query.base, [Attr.pageStart]: range.start, [Attr.pageLimit]: range.limit },
      },
      this.#context,
    );
    const startedAt = performance.now();
    const attributes = { ...query.base };
    try {
      const page = await otel.context.with(
        otel.trace.setSpan(this.#context, span).setValue(tallyKey, tally),
        fetch,
      );
      tally.rows = page.rowCount;
      tally.pages = 1;
      tally.requests = page.requests;
      tally.wireBytes = page.wireBytes;
      tally.decodedBytes = page.bytes;
      query.metrics.rows.add(page.rowCount, query.base);
      query.metrics.bytes.add(page.wireBytes, { ...query.base, [Attr.bytesKind]: 'wire' });
      query.metrics.bytes.add(page.bytes, { ...query.base, [Attr.bytesKind]: 'decoded' });
      return page;
    } catch (err) {
      query.tracing.fail(span, err);
      attributes[Attr.errorType] = errorType(err);
      throw err;
    } finally {
      span.setAttributes(tally.attributes());
      span.end();
      this.#tally.add(tally);
      query.metrics.pageDuration.record((performance.now() - startedAt) / 1000, attributes);
    }
  }

  #end(stream: ReadableStreamLike): void {
    if (this.#ended) return;
    this.#ended = true;
    const error = stream.errored ?? undefined;
    const concurrency = {
      [Attr.concurrency]: stream.concurrency,
      [Attr.concurrencyMax]: this.#maxConcurrency,
    };
    this.#span.setAttributes({ ...this.#tally.attributes(), ...concurrency });
    if (error) this.#query.tracing.fail(this.#span, error);
    this.#span.end();
    this.#query.readEnded(this.#tally, error, concurrency);
  }
}

function errorType(error: unknown): string {
  if (error instanceof DqsError) return error.code;
  return error instanceof Error ? error.name : 'Error';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
