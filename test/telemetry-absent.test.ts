/**
 * Without `@opentelemetry/api` (an optional peer), the library works and tries to import it once per
 * process, whatever the number of clients and queries, and only once something is registered with
 * OpenTelemetry (until then the API would only give no-ops). A child process runs the built library with
 * a module hook that makes the package unresolvable, as on a machine where it was never installed.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { setup } from './helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const INDEX = join(ROOT, 'dist', 'index.js');
const dir = mkdtempSync(join(tmpdir(), 'dqs-otel-absent-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Resolving the package fails as if it were not installed; each attempt is written to stderr. */
const HOOKS = `
export async function resolve(specifier, context, next) {
  if (specifier === '@opentelemetry/api') {
    process.stderr.write('resolve @opentelemetry/api\\n');
    const err = new Error("Cannot find package '@opentelemetry/api' imported from " + context.parentURL);
    err.code = 'ERR_MODULE_NOT_FOUND';
    throw err;
  }
  return next(specifier, context);
}
`;

const SCRIPT = `
import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});
const { DatasetClient } = await import(${JSON.stringify(pathToFileURL(INDEX).href)});
const [baseUrl, apiKey, registered] = process.argv.slice(2);
let rows = 0;
for (let i = 0; i < 2; i++) {
  const client = new DatasetClient({ baseUrl, apiKey });
  // What the API's registerGlobal leaves on globalThis when an application sets up its SDK (with a copy
  // of the API this process cannot resolve, here): after the first client was made, seen at its query.
  if (registered === 'registered') globalThis[Symbol.for('opentelemetry.js.api.1')] = { version: '1.9.0' };
  rows += (await (await client.query('job_listings')).toTable({ pageSize: 1000 })).numRows;
  for await (const batch of client.stream('job_listings', {}, { pageSize: 1000 })) rows += batch.numRows;
  await client.close();
}
process.stdout.write(JSON.stringify({ rows }));
`;

function ensureBuilt(): void {
  if (existsSync(INDEX)) return;
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: ROOT,
      stdio: 'inherit',
    },
  );
}

/** Runs SCRIPT in a child; the import attempts it made, and the `traceparent` headers the service saw. */
async function runChild(registered: boolean): Promise<{ attempts: number; traceparents: unknown[] }> {
  ensureBuilt();
  writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
  writeFileSync(join(dir, 'main.mjs'), SCRIPT);
  const traceparents: unknown[] = [];
  const { emu } = await setup({
    rowCap: 2500,
    fault: (r) => {
      traceparents.push(r.headers.traceparent);
      return undefined;
    },
  });
  const args = [join(dir, 'main.mjs'), emu.url, emu.apiKey, registered ? 'registered' : 'none'];
  const child = spawn(process.execPath, args, { env: { ...process.env, DQS_API_KEY: '' } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d;
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d;
  });
  const code = await new Promise((resolve) => child.on('close', resolve));
  expect(code, err).toBe(0);
  expect(JSON.parse(out)).toEqual({ rows: 4 * 2500 });
  return { attempts: (err.match(/resolve @opentelemetry\/api/g) ?? []).length, traceparents };
}

it('runs without @opentelemetry/api, trying to import it once for two clients and four reads', async () => {
  const { attempts, traceparents } = await runChild(true);
  expect(attempts).toBe(1);
  expect(traceparents.length).toBeGreaterThan(8);
  expect(traceparents.every((t) => t === undefined)).toBe(true);
});

it('does not import @opentelemetry/api while nothing is registered with it (its calls would be no-ops)', async () => {
  // Before, every client imported it at once: ~45 ms of the event loop, the first query ~50 ms later.
  const { attempts, traceparents } = await runChild(false);
  expect(attempts).toBe(0);
  expect(traceparents.every((t) => t === undefined)).toBe(true);
});
