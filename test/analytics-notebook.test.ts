/**
 * examples/notebook.mjs, the script twin of examples/notebook.ipynb that docs/analytics.md walks through,
 * runs end to end against the built package: every recipe there (preview, Polars, arquero, DuckDB,
 * partitioned export read back by DuckDB) keeps working.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, expect, it } from 'vitest';
import { queryTotal } from '../src/emulator/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const run = promisify(execFile);

beforeAll(() => {
  // `npm test` builds first; a lone run of this file on a stale dist/ builds here.
  if (existsSync(join(ROOT, 'dist', 'analytics', 'partitioned-export.js'))) return;
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: ROOT,
      stdio: 'inherit',
    },
  );
}, 120_000);

it('examples/notebook.mjs runs every recipe against the embedded emulator', async () => {
  const { stdout } = await run(process.execPath, ['examples/notebook.mjs'], { cwd: ROOT, timeout: 60_000 });
  const aapl = queryTotal('job_listings', { tickers: ['nasdaq:aapl'] });
  const both = queryTotal('job_listings', { tickers: ['nasdaq:aapl', 'nyse:wmt'] });
  expect(stdout).toMatch(/^QueryResult job_listings · query [0-9a-f]{12}… · [\d,]+ rows · complete$/m);
  expect(stdout).toMatch(/^\s+posted_date\s+Date32<DAY>\s+Date Posted$/m);
  expect(stdout).toContain(`showing 5 of ${both.toLocaleString('en-US')} rows`);
  expect(stdout).toMatch(/^Arrow table · [\d,]+ rows · 13 columns$/m);
  expect(stdout).toContain(`ticker: 'nasdaq:aapl', ticker_count: ${aapl}`);
  expect(stdout).toContain(`ticker: 'nasdaq:aapl', count: ${aapl}`);
  expect(stdout).toContain(`duckdb: ${aapl} rows loaded`);
  expect(stdout).toContain('partition private:aldi: written, 0 rows');
  for (const t of ['nasdaq:aapl', 'nyse:wmt', 'lse:tsco']) {
    expect(stdout).toContain(`{ ticker: '${t}', n: ${queryTotal('web_traffic', { tickers: [t] })} }`);
  }
  // The notebook has the same cells.
  const notebook = JSON.parse(await readFile(join(ROOT, 'examples', 'notebook.ipynb'), 'utf8'));
  const code = notebook.cells.map((c: { source: string[] }) => c.source.join('')).join('\n');
  for (const call of [
    'preview(result',
    'toPolars(table',
    'aq.fromArrow(table)',
    'toDuckDB(',
    'exportPartitioned(client',
    // Re-run cells are answered by the result cache (docs/cache.md).
    'cache: true',
  ]) {
    expect(code).toContain(call);
  }
});
