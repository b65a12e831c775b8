/**
 * `@opentelemetry/api`, an optional peer: imported at most once per process, once an application has
 * registered something with it (`otelRegistered`), and remembered whether it was found or not. Its
 * absence is the normal case, not an error: nothing is logged and nothing is tried again.
 */
import type * as OtelApi from '@opentelemetry/api';

export type Otel = typeof OtelApi;

const NAME = '@opentelemetry/api';

let loading: Promise<Otel | undefined> | undefined;

/**
 * Where `@opentelemetry/api` 1.x keeps what an application registered (its `registerGlobal`: a tracer or
 * meter provider, a context manager, a propagator), on `globalThis`, whichever copy of the package did it.
 */
const REGISTERED = Symbol.for('opentelemetry.js.api.1');

/**
 * Whether an application registered anything with OpenTelemetry's API. Until it has, every call of the API
 * is a no-op, so the package need not be loaded: loading it (installed, often as some other package's
 * dependency) held the event loop ~45 ms and delayed a process's first query by ~50 ms.
 */
export function otelRegistered(): boolean {
  return (globalThis as Record<symbol, unknown>)[REGISTERED] !== undefined;
}

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
