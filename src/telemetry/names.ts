/**
 * The names of the spans, attributes and metrics the client makes (docs/telemetry.md lists them): one
 * place, so a dashboard built on them is not broken by a rename somewhere in the engine. OpenTelemetry's
 * semantic conventions where one fits (`server.address`, `error.type`, `http.response.status_code`),
 * `dqs.*` for the rest. None of them ever holds a credential or a header.
 */

/** The instrumentation scope: the tracer's and the meter's name. */
export const SCOPE = 'dqs-client';

export const Span = {
  query: 'dqs.query',
  create: 'dqs.create',
  wait: 'dqs.wait',
  firstPage: 'dqs.first_page',
  read: 'dqs.read',
  page: 'dqs.page',
} as const;

export const Attr = {
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
  httpStatus: 'http.response.status_code',
  dataset: 'dqs.dataset.id',
  queryId: 'dqs.query.id',
  total: 'dqs.query.total',
  truncated: 'dqs.query.truncated',
  output: 'dqs.output',
  startRow: 'dqs.start_row',
  pageStart: 'dqs.page.start',
  pageLimit: 'dqs.page.limit',
  rows: 'dqs.rows',
  pages: 'dqs.pages',
  requests: 'dqs.requests',
  wireBytes: 'dqs.bytes.wire',
  decodedBytes: 'dqs.bytes.decoded',
  retries: 'dqs.retries',
  rateLimited: 'dqs.rate_limited',
  concurrency: 'dqs.concurrency.limit',
  concurrencyMax: 'dqs.concurrency.max',
  retryAttempt: 'dqs.retry.attempt',
  retryDelay: 'dqs.retry.delay_ms',
  bytesKind: 'dqs.bytes.kind',
  concurrencyReason: 'dqs.concurrency.reason',
} as const;

/** Span events. */
export const Event = {
  retry: 'dqs.retry',
  concurrency: 'dqs.concurrency',
} as const;

export const Metric = {
  queryDuration: 'dqs.client.query.duration',
  pageDuration: 'dqs.client.page.duration',
  rows: 'dqs.client.rows',
  bytes: 'dqs.client.bytes',
  retries: 'dqs.client.retries',
  rateLimited: 'dqs.client.rate_limited',
  concurrency: 'dqs.client.concurrency.limit',
} as const;
