/**
 * `@opentelemetry/api`, an optional peer: imported at most once per process, on the first query of a
 * client with telemetry on, and remembered whether it was found or not. Its absence is the normal case,
 * not an error: nothing is logged and nothing is tried again.
 */
import type * as OtelApi from '@opentelemetry/api';

export type Otel = typeof OtelApi;

const NAME = '@opentelemetry/api';

let loading: Promise<Otel | undefined> | undefined;

/** The API module, or undefined when it is not installed (or cannot be loaded). */
export function loadOtel(): Promise<Otel | undefined> {
  loading ??= importOtel();
  return loading;
}

async function importOtel(): Promise<Otel | undefined> {
  try {
    // A variable specifier: the peer is optional, bundlers and TypeScript must not require it.
    const name: string = NAME;
    const mod = (await import(name)) as Otel & { default?: Otel };
    // The package is CommonJS: ESM sees its exports as named ones and as `default`.
    return typeof mod.trace?.getTracer === 'function' ? mod : mod.default;
  } catch {
    return undefined;
  }
}
