/**
 * Every `@default` written in the source is held to what the code does. A default is found three ways:
 * - from a normalizer (the value the code uses when the option is unset), listed in `ACTUAL`;
 * - else from the implementation's `options.<name> ?? <literal>` in the same module, compared as values;
 * - a default that is a sentence, not a value, is listed in `DESCRIBED` with the check that holds it.
 * A new `@default` that none of these covers fails the first test: say where its value comes from.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_BYTES, normalizeCacheOptions } from '../src/cache/options.js';
import { LoopBudget } from '../src/core/loop-budget.js';
import { ROW_CAP } from '../src/core/wire.js';
import { DEFAULT_OPTIONS, normalizeOptions } from '../src/emulator/options.js';
import { DEFAULT_BATCH_SIZE } from '../src/output/fixed-batches.js';
import { UNMEASURED_LIMIT } from '../src/query/concurrency.js';
import * as linkConstants from '../src/query/link-constants.js';
import {
  DEFAULT_MAX_CONCURRENCY,
  DEFAULT_PAGE_SIZE,
  normalizeStreamOptions,
} from '../src/query/stream-options.js';
import { normalizeCheckTickers } from '../src/tickers/coverage.js';
import { DEFAULT_MAX_RESPONSE_BYTES, normalizeClientOptions } from '../src/transport/options.js';
import { normalizeRetryOptions } from '../src/transport/retry.js';

const src = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

interface Documented {
  readonly key: string;
  readonly file: string;
  readonly name: string;
  readonly doc: string;
}

/** `file#name` of every documented property with a `@default` (a repeated key gets `#2`, `#3`…). */
function documentedDefaults(): Documented[] {
  const out: Documented[] = [];
  const seen = new Map<string, number>();
  for (const path of sourceFiles(src)) {
    const text = readFileSync(path, 'utf8');
    const re =
      /\/\*\*((?:(?!\*\/)[\s\S])*?@default((?:(?!\*\/)[\s\S])*?))\*\/\s*(?:readonly\s+)?([A-Za-z_$][\w$]*)\??\s*[:(]/g;
    for (const m of text.matchAll(re)) {
      const doc = m[2]!
        .replace(/\n\s*\*\s?/g, ' ')
        .replace(/\s+@\w[\s\S]*$/, '')
        .trim();
      const file = relative(src, path).split('\\').join('/');
      const base = `${file}#${m[3]}`;
      const n = (seen.get(base) ?? 0) + 1;
      seen.set(base, n);
      out.push({ key: n === 1 ? base : `${base}#${n}`, file, name: m[3]!, doc });
    }
  }
  return out;
}

const UNITS: Record<string, number> = { MiB: 1024 ** 2, GiB: 1024 ** 3, minutes: 60_000 };

/** The value a `@default` text starts with, or `NOT_A_VALUE` for a sentence. */
const NOT_A_VALUE = Symbol('sentence');
function literal(doc: string): unknown {
  let m = /^'([^']*)'/.exec(doc);
  if (m) return m[1];
  m = /^(true|false|undefined)\b/.exec(doc);
  if (m) return m[1] === 'undefined' ? undefined : m[1] === 'true';
  m = /^0o([0-7]+)\b/.exec(doc);
  if (m) return Number.parseInt(m[1]!, 8);
  m = /^(\d[\d_]*(?:\.\d+)?)(?:\s+(MiB|GiB|minutes)\b)?/.exec(doc);
  if (m) return Number(m[1]!.replaceAll('_', '')) * (m[2] ? UNITS[m[2]]! : 1);
  m = /^(\{[^}]*\})$/.exec(doc);
  if (m) return new Function(`return (${m[1]!.replaceAll(/(\d)_(\d)/g, '$1$2')});`)();
  return NOT_A_VALUE;
}

const stream = normalizeStreamOptions({});
// The environment must not decide these: the client's own defaults.
const client = normalizeClientOptions({ baseUrl: 'http://127.0.0.1:1/', apiKey: 'k' });
const retry = normalizeRetryOptions(undefined);
const cache = normalizeCacheOptions(true, { HOME: '/home/u' } as NodeJS.ProcessEnv)!;
const emulator = normalizeOptions({});

/** Values from the code's normalizers, for options whose default is a value. */
const ACTUAL: Record<string, () => unknown> = {
  'cache/options.ts#maxBytes': () => cache.maxBytes,
  'cache/options.ts#refresh': () => cache.refresh,
  'cache/options.ts#maxAge': () => cache.maxAge,
  'output/arrow-ipc.ts#batchSize': () => DEFAULT_BATCH_SIZE,
  'query/stream-options.ts#output': () => stream.output,
  'query/stream-options.ts#format': () => stream.format,
  'query/stream-options.ts#pageSize': () => (stream.pageSizeAuto ? 'auto' : stream.pageSize),
  'query/stream-options.ts#concurrency': () => stream.concurrency,
  'query/stream-options.ts#windowBytes': () => stream.windowBytes,
  'query/stream-options.ts#maxRows': () => stream.maxRows,
  'query/stream-options.ts#startRow': () => stream.startRow,
  'query/stream-options.ts#onInvalid': () => stream.onInvalid,
  'query/stream-options.ts#dates': () => stream.dates,
  'query/stream-options.ts#bigNumbers': () => stream.bigNumbers,
  'query/stream-options.ts#onTruncated': () => stream.onTruncated,
  'query/stream-options.ts#invalidUtf8': () => stream.invalidUtf8,
  'query/stream-options.ts#hedge': () => stream.hedge,
  'query/stream-options.ts#decoder': () => stream.decoder,
  'transport/options.ts#timeoutMs': () => client.timeoutMs,
  'transport/options.ts#maxResponseBytes': () => client.maxResponseBytes,
  'transport/options.ts#allowInsecureHttp': () => false,
  'transport/options.ts#apiVersion': () => client.apiVersion,
  'transport/options.ts#retry': () => ({
    retries: retry.retries,
    minDelayMs: retry.minDelayMs,
    maxDelayMs: retry.maxDelayMs,
    deadlineMs: retry.deadlineMs,
  }),
  'transport/retry.ts#retries': () => retry.retries,
  'transport/retry.ts#minDelayMs': () => retry.minDelayMs,
  'transport/retry.ts#maxDelayMs': () => retry.maxDelayMs,
  'transport/retry.ts#deadlineMs': () => retry.deadlineMs,
  'transport/options.ts#compression': () => client.compression.mode,
  // On unless `telemetry: false`: the client then has its telemetry (which does nothing without the package).
  'transport/options.ts#telemetry': () => client.telemetry !== undefined,
  'emulator/options.ts#compression': () => emulator.compression.codings.length > 0,
  'emulator/options.ts#level': () => emulator.compression.level,
};
for (const name of Object.keys(DEFAULT_OPTIONS)) {
  ACTUAL[`emulator/options.ts#${name}`] ??= () => emulator[name as keyof typeof emulator];
}

/** Defaults that are sentences: the check that holds each to the code. */
const DESCRIBED: Record<string, () => void> = {
  'analytics/partitioned-export.ts#parquet': () => {
    source('analytics/partitioned-export.ts', /parquet: options\.parquet \?\? \{\}/);
    source('output/parquet.ts', /options\.compression \?\? 'zstd'/);
    source('output/parquet.ts', /options\.rowGroupSize \?\? 65_536/);
  },
  'analytics/partitioned-export.ts#overwrite': () =>
    source('analytics/partitioned-export.ts', /overwrite: options\.overwrite === true/),
  'convert/batch-builder.ts#onInvalid': () =>
    source('convert/batch-builder.ts', /options\?\.onInvalid \?\? 'error'/),
  'core/safe-file.ts#mode': () => source('core/safe-file.ts', /mode = 0o666\)/),
  'emulator/fault-plan.ts#trickle': () => {
    source('emulator/fault-plan.ts', /options\.trickle\?\.bytesPerChunk, 16_384,/);
    source('emulator/fault-plan.ts', /options\.trickle\?\.intervalMs, 2,/);
  },
  'output/csv.ts#nullText': () => source('output/csv.ts', /nullText === undefined \? '' :/),
  'analytics/dataframes.ts#tempDir': () =>
    source('analytics/dataframes.ts', /options\.tempDir \?\? tmpdir\(\)/),
  'cache/options.ts#dir': () => expect(cache.dir).toBe('/home/u/.cache/dqs-client'),
  'transport/options.ts#loopBudget': () => {
    const a = normalizeClientOptions({ baseUrl: 'http://127.0.0.1:1/', apiKey: 'k' });
    const b = normalizeClientOptions({ baseUrl: 'http://127.0.0.1:1/', apiKey: 'k' });
    expect(a.loopBudget).toBeInstanceOf(LoopBudget);
    expect(a.loopBudget).not.toBe(b.loopBudget);
  },
  'client.ts#maxRows': () =>
    source('client.ts', /optionalInteger\(options\.maxRows, 'maxRows', 0, ROW_CAP\)/),
  'client.ts#firstPageRows': () => {
    expect(DEFAULT_PAGE_SIZE).toBe(10_000);
    source('client.ts', /optionalInteger\(options\.firstPageRows, 'firstPageRows', 1, DEFAULT_PAGE_SIZE\)/);
  },
  'client.ts#cache': () => source('client.ts', /options\.cache === false \? undefined : this\.#cache/),
  'client.ts#cache#2': () => expect(normalizeCacheOptions(undefined)).toBeUndefined(),
  'client.ts#checkTickers': () => expect(normalizeCheckTickers(undefined)).toBeUndefined(),
  'emulator/fault-plan.ts#kinds': () => source('emulator/fault-plan.ts', /options\.kinds \?\? FAULT_KINDS/),
  'emulator/fault-plan.ts#only': () => source('emulator/fault-plan.ts', /options\.only/),
  'emulator/options.ts#fault': () => expect(emulator.fault).toBeUndefined(),
  'emulator/options.ts#tls': () => expect(emulator.tls).toBeUndefined(),
  'emulator/options.ts#codings': () =>
    expect(emulator.compression.codings.filter((c) => c !== 'zstd')).toEqual(['gzip', 'br', 'deflate']),
  'emulator/options.ts#maxPageRowsInFlight': () => {
    expect(emulator.maxPageRowsInFlight).toBe(250_000);
    expect(normalizeOptions({ latencyMs: 10 }).maxPageRowsInFlight).toBe(0);
  },
  'emulator/options.ts#pageCacheIdleMs': () => {
    expect(emulator.pageCacheIdleMs).toBe(5000);
    expect(normalizeOptions({ pageCacheSize: 8 }).pageCacheIdleMs).toBe(0);
  },
  'query/query-result.ts#format': () => source('query/query-result.ts', /options\.format \?\? 'json'/),
  'query/query-result.ts#limit': () =>
    source('query/query-result.ts', /options\.limit \?\? Math\.max\(1, this\.total - start \+ 1\)/),
  'query/stream-options.ts#maxConcurrency': () => {
    expect(DEFAULT_MAX_CONCURRENCY).toBe(64);
    source('client.ts', /this\.http\.connections \?\? DEFAULT_MAX_CONCURRENCY/);
  },
  'query/stream-options.ts#window': () => source('query/page-engine.ts', /2 \* scheduler\.limit\)/),
  'query/stream-options.ts#batchSize': () => expect(stream.batchSizeAuto).toBe(true),
  'query/stream-options.ts#timeoutMs': () => expect(stream.timeoutMs).toBeUndefined(),
  'transport/endpoints.ts#mediaType': () =>
    source('transport/endpoints.ts', /options\.mediaType \?\? MediaType\.table/),
  'transport/options.ts#baseUrl': () => source('transport/options.ts', /DQS_BASE_URL/),
  'transport/options.ts#apiKey': () => source('transport/options.ts', /DQS_API_KEY/),
  'transport/options.ts#connections': () => expect(client.connections).toBeUndefined(),
  'transport/options.ts#proxy': () => expect(client.proxy).toBeUndefined(),
  'transport/options.ts#ca': () => expect(client.ca).toBeUndefined(),
  'transport/options.ts#logger': () => expect(client.logger).toBeUndefined(),
  'transport/options.ts#rateLimit': () => expect(client.rateLimiter).toBeUndefined(),
};

function source(file: string, pattern: RegExp): void {
  expect(readFileSync(join(src, file), 'utf8'), file).toMatch(pattern);
}

/** The literal after `options.<name> ??` (or `<name> = ` in a destructuring) in the module, as a value. */
function codeDefault(d: Documented): unknown {
  const text = readFileSync(join(src, d.file), 'utf8');
  const name = d.name;
  const m =
    new RegExp(`\\boptions\\.${name}\\s*\\?\\?\\s*([^,;)]+)`).exec(text) ??
    // optionalInteger(options.x, 'x', min, default) and the fault plan's count('x', options.x, default, min)
    new RegExp(`optionalInteger\\(options\\.${name}, '${name}', [^,]+, ([^,)]+)\\)`).exec(text) ??
    new RegExp(`count\\('${name}', options\\.${name}, ([^,)]+),`).exec(text) ??
    new RegExp(`optionalBoolean\\(options\\.${name}, '${name}', ([^,)]+)\\)`).exec(text) ??
    new RegExp(`\\{[^}]*\\b${d.name}\\s*=\\s*([^,}]+)[^}]*\\}\\s*=\\s*options`).exec(text);
  if (!m) return NOT_A_VALUE;
  return literal(m[1]!.trim());
}

const documented = documentedDefaults();

describe('option defaults', () => {
  it('finds the documented defaults (the scan works)', () => {
    expect(documented.length).toBeGreaterThan(100);
    expect(documented.find((d) => d.key === 'query/stream-options.ts#windowBytes')?.doc).toBe('128 MiB');
  });

  it('knows where every @default comes from', () => {
    const unheld = documented
      .filter((d) => !(d.key in DESCRIBED) && !(d.key in ACTUAL) && codeDefault(d) === NOT_A_VALUE)
      .map((d) => `${d.key}: ${d.doc}`);
    expect(unheld).toEqual([]);
  });

  it.each(documented.filter((d) => !(d.key in DESCRIBED)).map((d) => [d.key, d] as const))(
    '%s is what the code uses',
    (_key, d) => {
      const documentedValue = literal(d.doc);
      expect(documentedValue, `${d.key}: '${d.doc}' is a sentence: list it in DESCRIBED`).not.toBe(
        NOT_A_VALUE,
      );
      const actual = d.key in ACTUAL ? ACTUAL[d.key]!() : codeDefault(d);
      expect(actual).toEqual(documentedValue);
    },
  );

  it.each(Object.keys(DESCRIBED))('%s (a sentence) holds', (key) => {
    expect(documented.map((d) => d.key)).toContain(key);
    DESCRIBED[key]!();
  });

  it('states the constants the docs name', () => {
    expect(ROW_CAP).toBe(500_000);
    expect(DEFAULT_MAX_BYTES).toBe(1024 ** 3);
    expect(DEFAULT_MAX_RESPONSE_BYTES).toBe(256 * 1024 ** 2);
    expect(UNMEASURED_LIMIT).toBe(4);
  });

  it("the link model's constants are the ones docs/performance.md states, every one of them", () => {
    // The table under "The link model: its constants": | `NAME` | value | ...
    const doc = readFileSync(join(src, '..', 'docs', 'performance.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### The link model: its constants'));
    const rows = [...section.matchAll(/^\| `([A-Z_]+)` \| ([^|]+) \|/gm)].map(
      (m) => [m[1]!, m[2]!.trim()] as const,
    );
    const stated = new Map(rows);
    const code = Object.entries(linkConstants);
    expect([...stated.keys()].sort()).toEqual(code.map(([name]) => name).sort());
    for (const [name, value] of code) {
      const text = stated
        .get(name)!
        .replaceAll(',', '')
        .replace(/^(\d+(?:\.\d+)?) (KiB|MB|ms|s)$/, (_, n, unit) =>
          String(Number(n) * ({ KiB: 1024, MB: 1e6, ms: 1, s: 1000 } as Record<string, number>)[unit]!),
        );
      expect(Number(text), `${name}: the docs say ${stated.get(name)}`).toBe(value);
    }
    // At most ~15 named constants: the model is the rule, not the constants.
    expect(code.length).toBeLessThanOrEqual(15);
  });
});
