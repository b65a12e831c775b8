/**
 * Without `@opentelemetry/api` (an optional peer), the library works and tries to import it once per
 * process, whatever the number of clients and queries. A child process runs the built library with a
 * module hook that makes the package unresolvable, as on a machine where it was never installed.
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
const [baseUrl, apiKey] = process.argv.slice(2);
let rows = 0;
for (let i = 0; i < 2; i++) {
  const client = new DatasetClient({ baseUrl, apiKey });
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

it('runs without @opentelemetry/api, trying to import it once for two clients and four reads', async () => {
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
  const child = spawn(process.execPath, [join(dir, 'main.mjs'), emu.url, emu.apiKey], {
    env: { ...process.env, DQS_API_KEY: '' },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d;
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d;
  });
  const code = await new Promise((resolve) => child.on('close', resolve));
  expect(err.match(/resolve @opentelemetry\/api/g) ?? [], err).toHaveLength(1);
  expect(code, err).toBe(0);
  expect(JSON.parse(out)).toEqual({ rows: 4 * 2500 });
  expect(traceparents.length).toBeGreaterThan(8);
  expect(traceparents.every((t) => t === undefined)).toBe(true);
});
