/**
 * A client's telemetry switch: made (or not, with `telemetry: false`) by the options, it loads
 * `@opentelemetry/api` once per process (load.ts) once the application has registered something with it,
 * and until and unless that finds the package it does nothing at all. The transport asks it to put the
 * trace context into request headers and tells it of retries; the query lifecycle asks it for a
 * `QueryTelemetry`.
 */
import { loadOtel, otelRegistered } from './load.js';
import { Attr } from './names.js';
import { OtelTracing, type TracingBase, tracingBase } from './otel-query.js';
import type { QueryTelemetry, RetryLike } from './telemetry.js';

/** One per process, whatever the number of clients. */
let shared: Promise<TracingBase | undefined> | undefined;

function sharedTracing(): Promise<TracingBase | undefined> {
  shared ??= loadOtel().then((otel) => otel && tracingBase(otel));
  return shared;
}

export class ClientTelemetry {
  readonly #server: { readonly [Attr.serverAddress]: string; readonly [Attr.serverPort]: number };
  /** Set once the API has loaded: until then (and for good without it) every hook is a no-op. */
  #tracing: OtelTracing | undefined;
  #loaded: Promise<OtelTracing | undefined> | undefined;

  constructor(baseUrl: URL) {
    this.#server = {
      [Attr.serverAddress]: baseUrl.hostname.replace(/^\[|\]$/g, ''),
      [Attr.serverPort]: Number(baseUrl.port) || (baseUrl.protocol === 'https:' ? 443 : 80),
    };
    // Started now, not at the first query, so that requests before any query carry the trace context too.
    this.#load();
  }

  /**
   * Loads the API once something is registered with it (an application that sets up its SDK after making
   * the client is seen at its next query or request), and remembers it.
   */
  #load(): Promise<OtelTracing | undefined> | undefined {
    if (this.#loaded === undefined && otelRegistered()) {
      this.#loaded = sharedTracing().then((parts) => {
        this.#tracing = parts && new OtelTracing(parts, this.#server);
        return this.#tracing;
      });
      // A rejected load is an absent package (load.ts catches): nothing to report, nothing unhandled.
      this.#loaded.catch(() => {});
    }
    return this.#loaded;
  }

  /**
   * The telemetry of a query starting now, under the caller's active span; undefined without the API.
   * `endsWithRead`: the query is `client.stream()`'s, and ends with its stream.
   */
  async query(datasetId: string, endsWithRead: boolean): Promise<QueryTelemetry | undefined> {
    return (this.#tracing ?? (await this.#load()))?.query(datasetId, endsWithRead);
  }

  /** Puts the active trace context into `headers` (W3C `traceparent`, or the application's propagator). */
  inject(headers: Record<string, string>): void {
    const tracing = this.#tracing;
    if (tracing) tracing.otel.propagation.inject(tracing.otel.context.active(), headers);
    else this.#load();
  }

  retry(event: RetryLike): void {
    this.#tracing?.retry(event);
  }
}
