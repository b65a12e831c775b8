/**
 * Seeded fault plans: a `FaultHook` that injects faults by rate and by request number, reproducibly.
 *
 * Whether request N gets a fault, which kind, and its parameters are pure functions of (seed, N): no
 * `Math.random`, no state consulted, so the same seed gives the same plan whatever order concurrent
 * requests are decided in. The plan only counts what it injected (`injected`, `log`), so a test can
 * compare that with the retries its client reported.
 *
 * @example
 * const plan = faultPlan({ seed: 7, rate: 0.1 });
 * const emu = await startEmulator({ fault: plan });
 * // ... download ...
 * expect(retries).toBe(plan.failures);
 */
import { InvalidArgumentError } from '../core/errors.js';
import { checkKeys, optionKeys } from '../core/validate.js';
import type { Fault, FaultContext, FaultHook } from './faults.js';
import { describeValue } from './messages.js';
import { hash2 } from './random.js';

/**
 * What a plan can inject:
 * - `latency`: a delay of up to `latencyMs` before an otherwise normal answer;
 * - `429`: Too Many Requests with `Retry-After: <retryAfter>`;
 * - `500`, `502`, `503`, `504`: server errors with a `{message}` body;
 * - `reset`: the connection reset before any response byte;
 * - `cut`: the real headers (full `Content-Length`) and part of the body, then the close;
 * - `trickle`: the real body, slowly (`trickle.bytesPerChunk` every `trickle.intervalMs`).
 */
export type FaultKind = 'latency' | '429' | '500' | '502' | '503' | '504' | 'reset' | 'cut' | 'trickle';

export const FAULT_KINDS: readonly FaultKind[] = Object.freeze([
  'latency',
  '429',
  '500',
  '502',
  '503',
  '504',
  'reset',
  'cut',
  'trickle',
]);

/**
 * Kinds that make the request fail, so a client must retry it. `latency` and `trickle` slow a request
 * down but let it succeed (unless they outlast a timeout).
 */
export const FAILING_KINDS: readonly FaultKind[] = Object.freeze(
  FAULT_KINDS.filter((kind) => kind !== 'latency' && kind !== 'trickle'),
);

/** Kinds that act on a response body; a HEAD answer has none, so they are never drawn for HEAD. */
const BODY_KINDS: ReadonlySet<FaultKind> = new Set(['cut', 'trickle']);

export interface FaultPlanOptions {
  /** Seed of the plan, an integer 0 to 2^32 - 1. Same seed, same faults at the same request numbers. */
  readonly seed: number;
  /**
   * Probability that an eligible request gets a fault, 0 to 1.
   * @default 0.1
   */
  readonly rate?: number;
  /**
   * Kinds drawn from, uniformly, when a request gets a fault.
   * @default every kind (FAULT_KINDS)
   */
  readonly kinds?: readonly FaultKind[];
  /**
   * Requests eligible for random faults (e.g. only page GETs). `at` entries apply regardless.
   * @default every request
   */
  readonly only?: (request: FaultContext) => boolean;
  /**
   * Faults at exact request numbers (the emulator's 1-based `requestNumber`), a kind or a full `Fault`.
   * They replace the random draw for those requests.
   */
  readonly at?: Readonly<Record<number, FaultKind | Fault>>;
  /**
   * Longest injected latency, in ms; each `latency` fault waits a seeded amount up to it.
   * @default 50
   */
  readonly latencyMs?: number;
  /**
   * `Retry-After` value of injected 429s, in seconds (or an HTTP date).
   * @default '1'
   */
  readonly retryAfter?: string;
  /**
   * Pace of `trickle` faults.
   * @default { bytesPerChunk: 16384, intervalMs: 2 }
   */
  readonly trickle?: { readonly bytesPerChunk: number; readonly intervalMs: number };
  /**
   * Largest number of body bytes a `cut` lets through; each cut keeps a seeded amount below it
   * (the emulator always keeps at least one byte short of the full body).
   * @default 65536
   */
  readonly cutMaxBytes?: number;
}

/** One injected fault, for the test's report. */
export interface InjectedFault {
  readonly requestNumber: number;
  readonly kind: FaultKind | 'custom';
  readonly method: string;
  readonly path: string;
}

/** A `FaultHook` with counters of what it injected. */
export interface FaultPlan extends FaultHook {
  /** Faults injected so far, by kind (`custom` counts `at` entries given as full `Fault` objects). */
  readonly injected: Readonly<Record<FaultKind | 'custom', number>>;
  /** Injected faults of the failing kinds (`FAILING_KINDS`): the retries a client should have made. */
  readonly failures: number;
  /** Every injected fault, in the order the emulator asked. */
  readonly log: readonly InjectedFault[];
  /** The fault request `requestNumber` would get, without counting it (for previews and tests). */
  decide(
    request: Pick<FaultContext, 'method' | 'requestNumber'>,
  ): { kind: FaultKind; fault: Fault } | undefined;
  /** Zeroes `injected` and empties `log`. */
  resetCounts(): void;
}

/** Salts that keep the per-request draws independent of one another. */
const DRAW_FAULT = 0x6661756c;
const DRAW_KIND = 0x6b696e64;
const DRAW_PARAM = 0x7061726d;

function uniform(seed: number, salt: number, n: number): number {
  return hash2((seed ^ salt) >>> 0, n) / 4294967296;
}

function fail(name: string, expected: string, value: unknown): never {
  throw new InvalidArgumentError(`faultPlan.${name}`, `Expected ${expected}, got ${describeValue(value)}`);
}

function count(name: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min)
    fail(name, `an integer >= ${min}`, value);
  return value;
}

function checkKind(name: string, value: unknown): FaultKind {
  if (!FAULT_KINDS.includes(value as FaultKind)) fail(name, `one of ${FAULT_KINDS.join(', ')}`, value);
  return value as FaultKind;
}

/** Builds a seeded, reproducible fault plan to pass as `startEmulator({ fault: plan })`. */
const KEYS = optionKeys<FaultPlanOptions>({
  seed: true,
  rate: true,
  kinds: true,
  only: true,
  at: true,
  latencyMs: true,
  retryAfter: true,
  trickle: true,
  cutMaxBytes: true,
});

export function faultPlan(options: FaultPlanOptions): FaultPlan {
  if (options === null || typeof options !== 'object') fail('options', 'an object', options);
  checkKeys(options, KEYS, 'options of `faultPlan()`');
  const seed = options.seed;
  if (typeof seed !== 'number' || !Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
    fail('seed', 'an integer between 0 and 4294967295', seed);
  const rate = options.rate ?? 0.1;
  if (typeof rate !== 'number' || !(rate >= 0 && rate <= 1)) fail('rate', 'a number from 0 to 1', rate);
  const kinds = options.kinds ?? FAULT_KINDS;
  if (!Array.isArray(kinds) || kinds.length === 0) fail('kinds', 'a non-empty array of fault kinds', kinds);
  kinds.forEach((k, i) => checkKind(`kinds[${i}]`, k));
  const only = options.only;
  if (only !== undefined && typeof only !== 'function') fail('only', 'a function', only);
  const latencyMs = count('latencyMs', options.latencyMs, 50, 0);
  const retryAfter = options.retryAfter ?? '1';
  if (typeof retryAfter !== 'string' || !/^[\x20-\x7e]+$/.test(retryAfter))
    fail('retryAfter', 'a header value such as "1"', retryAfter);
  const trickle = {
    bytesPerChunk: count('trickle.bytesPerChunk', options.trickle?.bytesPerChunk, 16_384, 1),
    intervalMs: count('trickle.intervalMs', options.trickle?.intervalMs, 2, 0),
  };
  const cutMaxBytes = count('cutMaxBytes', options.cutMaxBytes, 65_536, 1);
  const at = new Map<number, FaultKind | Fault>();
  for (const [key, value] of Object.entries(options.at ?? {})) {
    const n = Number(key);
    if (!Number.isInteger(n) || n < 1) fail(`at[${key}]`, 'a request number >= 1 as key', key);
    if (typeof value === 'string') checkKind(`at[${key}]`, value);
    else if (value === null || typeof value !== 'object')
      fail(`at[${key}]`, 'a fault kind or a Fault', value);
    at.set(n, value);
  }
  const bodyless = kinds.filter((k) => !BODY_KINDS.has(k));

  /** The concrete fault of `kind` for request `n`, its parameters drawn from (seed, n). */
  const build = (kind: FaultKind, n: number): Fault => {
    const p = uniform(seed, DRAW_PARAM, n);
    switch (kind) {
      case 'latency':
        return { kind: 'delay', ms: Math.floor(p * (latencyMs + 1)) };
      case '429':
        return { kind: 'status', status: 429, headers: { 'Retry-After': retryAfter } };
      case '500':
      case '502':
      case '503':
      case '504':
        return { kind: 'status', status: Number(kind) };
      case 'reset':
        return { kind: 'reset' };
      case 'cut':
        return { kind: 'cut', afterBytes: Math.floor(p * cutMaxBytes) };
      case 'trickle':
        return { kind: 'trickle', ...trickle };
    }
  };

  const decide: FaultPlan['decide'] = ({ method, requestNumber: n }) => {
    const fixed = at.get(n);
    if (typeof fixed === 'string') return { kind: fixed, fault: build(fixed, n) };
    if (fixed !== undefined) return undefined; // a full Fault: see `hook`
    if (uniform(seed, DRAW_FAULT, n) >= rate) return undefined;
    const pool = method === 'HEAD' ? bodyless : kinds;
    if (pool.length === 0) return undefined;
    const kind = pool[Math.floor(uniform(seed, DRAW_KIND, n) * pool.length)]!;
    return { kind, fault: build(kind, n) };
  };

  const injected = Object.fromEntries([...FAULT_KINDS, 'custom'].map((k) => [k, 0])) as Record<
    FaultKind | 'custom',
    number
  >;
  const log: InjectedFault[] = [];
  const record = (kind: FaultKind | 'custom', request: FaultContext) => {
    injected[kind]++;
    log.push({ requestNumber: request.requestNumber, kind, method: request.method, path: request.path });
  };

  const hook = (request: FaultContext): Fault | undefined => {
    const fixed = at.get(request.requestNumber);
    if (fixed !== undefined && typeof fixed !== 'string') {
      record('custom', request);
      return fixed;
    }
    if (fixed === undefined && only !== undefined && !only(request)) return undefined;
    const decision = decide(request);
    if (decision) record(decision.kind, request);
    return decision?.fault;
  };

  // defineProperties, not Object.assign: `failures` must stay a live getter.
  return Object.defineProperties(hook, {
    injected: { value: injected, enumerable: true },
    log: { value: log, enumerable: true },
    decide: { value: decide },
    resetCounts: {
      value: () => {
        for (const k of Object.keys(injected)) injected[k as FaultKind | 'custom'] = 0;
        log.length = 0;
      },
    },
    failures: {
      get: () => FAILING_KINDS.reduce((sum, k) => sum + injected[k], 0),
      enumerable: true,
    },
  }) as FaultPlan;
}
