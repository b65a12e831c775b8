/**
 * The client's metric instruments, made from the global meter provider. The metrics API has no proxy
 * provider (unlike tracing): instruments made before an application registers its provider would stay
 * no-ops for good, so they are looked up per query and made again when the provider has changed.
 */
import type { Counter, Gauge, Histogram, MeterProvider } from '@opentelemetry/api';
import { VERSION } from '../core/version.js';
import type { Otel } from './load.js';
import { Metric, SCOPE } from './names.js';

export interface Instruments {
  readonly queryDuration: Histogram;
  readonly pageDuration: Histogram;
  readonly rows: Counter;
  readonly bytes: Counter;
  readonly retries: Counter;
  readonly rateLimited: Counter;
  /** Absent from API versions before 1.9 (synchronous gauges). */
  readonly concurrency: Gauge | undefined;
}

const made = new WeakMap<MeterProvider, Instruments>();

export function instruments(otel: Otel): Instruments {
  const provider = otel.metrics.getMeterProvider();
  let found = made.get(provider);
  if (found === undefined) {
    found = make(otel, provider);
    made.set(provider, found);
  }
  return found;
}

function make(otel: Otel, provider: MeterProvider): Instruments {
  const meter = provider.getMeter(SCOPE, VERSION);
  const { DOUBLE, INT } = otel.ValueType;
  return {
    queryDuration: meter.createHistogram(Metric.queryDuration, {
      description: 'Time from creating a query to its end (the end of its stream, for client.stream())',
      unit: 's',
      valueType: DOUBLE,
    }),
    pageDuration: meter.createHistogram(Metric.pageDuration, {
      description: 'Time to fetch one planned page: its requests, retries and decoding',
      unit: 's',
      valueType: DOUBLE,
    }),
    rows: meter.createCounter(Metric.rows, {
      description: 'Result rows read',
      unit: '{row}',
      valueType: INT,
    }),
    bytes: meter.createCounter(Metric.bytes, {
      description: 'Result body bytes read, on the wire (compressed) and decoded (dqs.bytes.kind)',
      unit: 'By',
      valueType: INT,
    }),
    retries: meter.createCounter(Metric.retries, {
      description: 'Requests retried, by the error that made them fail (error.type)',
      unit: '{retry}',
      valueType: INT,
    }),
    rateLimited: meter.createCounter(Metric.rateLimited, {
      description: 'Answers 429 (rate limited) from the service',
      unit: '{response}',
      valueType: INT,
    }),
    concurrency:
      typeof meter.createGauge === 'function'
        ? meter.createGauge(Metric.concurrency, {
            description:
              'Page requests a stream may have in flight (adaptive: changes as the service answers)',
            unit: '{request}',
            valueType: INT,
          })
        : undefined,
  };
}
