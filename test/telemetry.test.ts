/**
 * OpenTelemetry (docs/telemetry.md): with the SDK's in-memory exporter and a metric reader registered as
 * an application would, a query against the emulator over real HTTP gives one `dqs.query` span with its
 * phases and read as children and a `dqs.page` span per page; attributes agree with the result; the
 * service sees `traceparent`; retries and 429s are counted; the key is in nothing exported.
 */
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AggregationTemporality,
  type DataPoint,
  MeterProvider,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DatasetClient } from '../src/index.js';
import { FAST_RETRY, isPageGet, setup } from './helpers.js';

/** A reader that exports nothing: the test collects when it wants to look. */
class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

const KEY = 'sk-telemetry-SECRET-4f9a2c71';
const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let reader = new TestReader();
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
});

beforeEach(() => {
  exporter.reset();
  // A fresh meter provider per test, so each test's sums start at zero (the client makes its
  // instruments again when the global provider changes: that is tested here too).
  metrics.disable();
  reader = new TestReader();
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
});

afterAll(async () => {
  await tracerProvider.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
  metrics.disable();
});

function spans(name: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.name === name);
}

function one(name: string): ReadableSpan {
  const found = spans(name);
  expect(found, name).toHaveLength(1);
  return found[0]!;
}

function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** The sum of a counter (or count of a histogram) over all its points whose attributes match. */
function total(collected: ResourceMetrics, name: string, match: Record<string, unknown> = {}): number {
  let sum = 0;
  for (const scope of collected.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      for (const point of metric.dataPoints as DataPoint<unknown>[]) {
        if (!Object.entries(match).every(([k, v]) => point.attributes[k] === v)) continue;
        const value = point.value as number | { count: number };
        sum += typeof value === 'number' ? value : value.count;
      }
    }
  }
  return sum;
}

describe('telemetry', () => {
  it('client.stream(): one query span, its create, wait and read children, a page span per page', async () => {
    const traceparents: (string | undefined)[] = [];
    const { emu, client } = await setup(
      {
        apiKey: KEY,
        rowCap: 25_000,
        queryDelayMs: 120,
        fault: (r) => {
          traceparents.push(r.headers.traceparent as string | undefined);
          return undefined;
        },
      },
      { apiKey: KEY },
    );
    let rows = 0;
    let bytes = 0;
    const stream = client.stream('job_listings', {}, { pageSize: 5000, concurrency: 2 });
    stream.on('progress', (p: { bytes: number }) => {
      bytes = p.bytes;
    });
    for await (const batch of stream) rows += (batch as { numRows: number }).numRows;

    const query = one('dqs.query');
    const create = one('dqs.create');
    const wait = one('dqs.wait');
    const first = one('dqs.first_page');
    const read = one('dqs.read');
    const pages = spans('dqs.page');
    const id = query.spanContext().spanId;
    for (const child of [create, wait, first, read]) expect(parentOf(child)).toBe(id);
    for (const page of pages) expect(parentOf(page)).toBe(read.spanContext().spanId);
    expect(new Set(exporter.getFinishedSpans().map((s) => s.spanContext().traceId)).size).toBe(1);

    expect(rows).toBe(25_000);
    expect(pages).toHaveLength(5);
    expect(query.attributes['dqs.dataset.id']).toBe('job_listings');
    expect(query.attributes['dqs.query.total']).toBe(25_000);
    expect(query.attributes['dqs.query.id']).toBe(stream.source!.id);
    expect(query.attributes['server.address']).toBe('127.0.0.1');
    expect(query.attributes['server.port']).toBe(emu.port);
    expect(query.attributes['dqs.rows']).toBe(25_000);
    expect(read.attributes['dqs.rows']).toBe(25_000);
    expect(read.attributes['dqs.pages']).toBe(5);
    expect(read.attributes['dqs.bytes.decoded']).toBe(bytes);
    const pageSum = (attr: string) => pages.reduce((n, p) => n + (p.attributes[attr] as number), 0);
    expect(pageSum('dqs.rows')).toBe(25_000);
    expect(pageSum('dqs.bytes.decoded')).toBe(bytes);
    expect(pageSum('dqs.bytes.wire')).toBe(read.attributes['dqs.bytes.wire']);
    expect(read.attributes['dqs.bytes.wire']).toBeGreaterThan(0);
    expect(read.attributes['dqs.concurrency.limit']).toBe(2);
    expect(read.attributes['dqs.retries']).toBe(0);
    // The query span ends with its stream: it lasts at least as long as the read.
    expect(query.endTime >= read.endTime || query.endTime[0] >= read.endTime[0]).toBe(true);
    expect(pages.map((p) => p.attributes['dqs.page.start']).sort((a, b) => Number(a) - Number(b))).toEqual([
      1, 5001, 10001, 15001, 20001,
    ]);

    // Every request carried the trace context of the span it was made under.
    expect(traceparents.length).toBe(emu.requests.length);
    const traceId = query.spanContext().traceId;
    const spanIds = new Set(exporter.getFinishedSpans().map((s) => s.spanContext().spanId));
    for (const header of traceparents) {
      const [, tid, sid] = header!.split('-');
      expect(tid).toBe(traceId);
      expect(spanIds.has(sid!)).toBe(true);
    }
    // A page GET carried its own page span's id; the query's first page (its descriptors and the
    // stream's first rows), the first_page span's.
    const pageIds = new Set(pages.map((p) => p.spanContext().spanId));
    const pageHeaders = emu.requests
      .map((r, i) => (isPageGet(r) ? traceparents[i] : undefined))
      .filter((h): h is string => h !== undefined);
    expect(pageHeaders.length).toBeGreaterThanOrEqual(4);
    expect(pageHeaders[0]!.split('-')[2]).toBe(first.spanContext().spanId);
    for (const h of pageHeaders.slice(1)) expect(pageIds.has(h.split('-')[2]!)).toBe(true);

    const { resourceMetrics } = await reader.collect();
    expect(total(resourceMetrics, 'dqs.client.rows', { 'dqs.dataset.id': 'job_listings' })).toBe(25_000);
    expect(total(resourceMetrics, 'dqs.client.bytes', { 'dqs.bytes.kind': 'decoded' })).toBe(bytes);
    expect(total(resourceMetrics, 'dqs.client.page.duration')).toBe(5);
    expect(total(resourceMetrics, 'dqs.client.query.duration')).toBe(1);
  });

  it('a span active in the application is the parent of the query span', async () => {
    const { client } = await setup({ apiKey: KEY, rowCap: 100 }, { apiKey: KEY });
    const app = trace.getTracer('app');
    await app.startActiveSpan('job', async (span) => {
      const result = await client.query('job_listings');
      await result.toTable();
      span.end();
    });
    const job = one('job');
    const query = one('dqs.query');
    expect(parentOf(query)).toBe(job.spanContext().spanId);
    // query() then toTable(): the read is a child of the query span, which ended when query() returned.
    expect(parentOf(one('dqs.read'))).toBe(query.spanContext().spanId);
    expect(one('dqs.read').attributes['dqs.rows']).toBe(100);
    // Its rows are the read's: the query span does not claim a count it never saw.
    expect(query.attributes['dqs.rows']).toBeUndefined();
    expect(query.attributes['dqs.retries']).toBe(0);
  });

  it('retries and 429s: counted on the page span and its read, and in the metrics', async () => {
    const throttled = new Set(['5001']);
    const failed = new Set(['10001']);
    const { client } = await setup(
      {
        apiKey: KEY,
        rowCap: 15_000,
        fault: (r) => {
          const start = r.query.start ?? '';
          if (!isPageGet(r)) return undefined;
          if (throttled.delete(start))
            return { kind: 'status', status: 429, headers: { 'Retry-After': '0' } };
          if (failed.delete(start)) return { kind: 'status', status: 503 };
          return undefined;
        },
      },
      { apiKey: KEY, retry: FAST_RETRY },
    );
    const table = await (await client.query('job_listings')).toTable({ pageSize: 5000, concurrency: 2 });
    expect(table.numRows).toBe(15_000);
    const pages = spans('dqs.page');
    const byStart = (start: number) => pages.find((p) => p.attributes['dqs.page.start'] === start)!;
    expect(byStart(5001).attributes['dqs.retries']).toBe(1);
    expect(byStart(5001).attributes['dqs.rate_limited']).toBe(1);
    expect(byStart(10001).attributes['dqs.retries']).toBe(1);
    expect(byStart(10001).attributes['dqs.rate_limited']).toBe(0);
    const event = byStart(5001).events.find((e) => e.name === 'dqs.retry')!;
    expect(event.attributes).toMatchObject({
      'error.type': 'DQS_RATE_LIMITED',
      'http.response.status_code': 429,
      'dqs.retry.attempt': 1,
    });
    const read = one('dqs.read');
    expect(read.attributes['dqs.retries']).toBe(2);
    expect(read.attributes['dqs.rate_limited']).toBe(1);
    // The 429 halved the stream's concurrency: the read shows where it went.
    expect(read.events.some((e) => e.name === 'dqs.concurrency')).toBe(true);
    const { resourceMetrics } = await reader.collect();
    expect(total(resourceMetrics, 'dqs.client.retries')).toBe(2);
    expect(total(resourceMetrics, 'dqs.client.retries', { 'http.response.status_code': 503 })).toBe(1);
    expect(total(resourceMetrics, 'dqs.client.rate_limited')).toBe(1);
  });

  it('a failed query: the span says why (error.type, status), the read never starts', async () => {
    const { client } = await setup({ apiKey: KEY }, { apiKey: 'wrong-key-0123456789', retry: false });
    await expect(client.query('job_listings')).rejects.toMatchObject({ code: 'DQS_AUTH' });
    const query = one('dqs.query');
    expect(query.attributes['error.type']).toBe('DQS_AUTH');
    expect(query.status.code).toBe(2); // ERROR
    expect(one('dqs.create').attributes['error.type']).toBe('DQS_AUTH');
    expect(spans('dqs.read')).toHaveLength(0);
  });

  it('the API key is in no span, attribute, event, metric or log line', async () => {
    const logged: string[] = [];
    const log = (line: string) => logged.push(line);
    // The service echoes the key back in its errors: once in a retried 503, once in a final 400.
    let echoed = false;
    const { client } = await setup(
      {
        apiKey: KEY,
        rowCap: 6000,
        fault: (r) => {
          if (r.method === 'POST' && r.path.includes('app_reviews')) {
            return { kind: 'status', status: 400, body: { message: `bad body for key ${KEY}` } };
          }
          if (!isPageGet(r) || r.query.start !== '2001' || echoed) return undefined;
          echoed = true;
          return { kind: 'status', status: 503, body: { message: `overloaded for key ${KEY}` } };
        },
      },
      { apiKey: KEY, retry: FAST_RETRY, logger: { debug: log, info: log, warn: log, error: log } },
    );
    await client.stream('job_listings', {}, { pageSize: 2000 }).toArray();
    await expect(client.query('app_reviews')).rejects.toMatchObject({ code: 'DQS_BAD_REQUEST' });
    expect(echoed).toBe(true);
    const { resourceMetrics } = await reader.collect();
    const exported = JSON.stringify({
      spans: exporter.getFinishedSpans().map(plain),
      metrics: resourceMetrics,
    });
    expect(exported).toContain('dqs.page');
    expect(exported).toContain('bad body for key ***');
    expect(exported).not.toContain(KEY);
    expect(exported).not.toContain('SECRET');
    expect(logged.join('\n')).toContain('overloaded for key');
    expect(logged.join('\n')).not.toContain('SECRET');
  });

  it('option.telemetry: anything but a boolean is refused', () => {
    expect(() => new DatasetClient({ baseUrl: 'http://127.0.0.1:1', telemetry: 'yes' as never })).toThrow(
      /Invalid `telemetry`: Expected `telemetry` to be true or false, got "yes"/,
    );
  });

  it('telemetry: false makes no span and sends no traceparent, even inside an active span', async () => {
    const traceparents: unknown[] = [];
    const { client } = await setup(
      {
        apiKey: KEY,
        rowCap: 3000,
        fault: (r) => {
          traceparents.push(r.headers.traceparent);
          return undefined;
        },
      },
      { apiKey: KEY, telemetry: false },
    );
    await trace.getTracer('app').startActiveSpan('job', async (span) => {
      await client.stream('job_listings').toArray();
      span.end();
    });
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['job']);
    expect(traceparents.length).toBeGreaterThan(0);
    expect(traceparents.every((t) => t === undefined)).toBe(true);
  });
});

/** A span as plain data (what an exporter sends): name, attributes, events, status, links. */
function plain(span: ReadableSpan) {
  return {
    name: span.name,
    attributes: span.attributes,
    events: span.events,
    status: span.status,
    links: span.links,
    resource: span.resource.attributes,
  };
}
