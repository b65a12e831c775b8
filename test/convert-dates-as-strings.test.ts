/**
 * Row objects carried dates only as `Date` at UTC midnight: code reading them with local getters west of
 * UTC saw the day before. `dates: 'string'` gives ISO 8601 text instead; it must equal the Arrow table's
 * dates formatted, whatever the process's time zone. TZ is read once per process: each zone runs in a
 * child `node` against dist/ (built here), talking to the emulator over HTTP.
 */

import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const root = join(import.meta.dirname, '..');

beforeAll(() => {
  try {
    execFileSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      {
        cwd: root,
        stdio: 'ignore',
      },
    );
  } catch {
    // Others' in-progress files may not type-check; tsc still emits ours.
  }
}, 180_000);

/**
 * In the child: every date and timestamp column of two datasets, the rows' text against the Arrow
 * values formatted in UTC (`toISOString`, which no zone changes); and how many `Date` objects' local
 * `getDate()` differs from their UTC day (the shift the option exists for).
 */
const script = `
import { DatasetClient } from ${JSON.stringify(join(root, 'dist', 'index.js'))};
const [url, apiKey] = process.argv.slice(-2);
const client = new DatasetClient({ baseUrl: url, apiKey });
const out = { columns: [], checked: 0, mismatches: [], shifted: 0 };
for (const dataset of ['job_listings', 'app_reviews']) {
  const result = await client.query(dataset, { tickers: ['nasdaq:aapl', 'nyse:wmt'] });
  const table = await result.toTable();
  const rows = await result.toArray({ dates: 'string' });
  const objects = await result.toArray();
  for (const f of table.schema.fields) {
    const type = String(f.type);
    if (!type.startsWith('Date') && !type.startsWith('Timestamp')) continue;
    out.columns.push(dataset + '.' + f.name + ': ' + type);
    const dateOnly = type.startsWith('Date');
    [...table.getChild(f.name)].forEach((v, i) => {
      const text = v === null ? null : new Date(Number(v)).toISOString();
      const expected = text === null ? null : dateOnly ? text.slice(0, 10) : text.slice(0, 19) + 'Z';
      if (rows[i][f.name] !== expected) out.mismatches.push([f.name, i, rows[i][f.name], expected]);
      else if (expected !== null) out.checked++;
      const d = objects[i][f.name];
      if (dateOnly && d !== null && d.getDate() !== d.getUTCDate()) out.shifted++;
    });
  }
}
await client.close();
console.log(JSON.stringify({ ...out, mismatches: out.mismatches.slice(0, 5) }));
`;

interface ChildReport {
  columns: string[];
  checked: number;
  mismatches: unknown[];
  shifted: number;
}

async function runIn(tz: string, url: string, apiKey: string): Promise<ChildReport> {
  // Asynchronously: the emulator answering the child runs in this process.
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--input-type=module', '-e', script, url, apiKey],
    { cwd: root, env: { ...process.env, TZ: tz }, encoding: 'utf8' },
  );
  return JSON.parse(stdout) as ChildReport;
}

describe("dates: 'string'", () => {
  it.each(['America/Los_Angeles', 'Pacific/Kiritimati'])(
    'rows equal the Arrow dates formatted under TZ=%s',
    async (tz) => {
      const { emu } = await setup();
      const got = await runIn(tz, emu.url, emu.apiKey);
      expect(got.columns.length).toBeGreaterThanOrEqual(3);
      expect(got.mismatches).toEqual([]);
      expect(got.checked).toBeGreaterThan(1000);
      // West of UTC every Date at UTC midnight shows the day before through local getters; east of
      // UTC+0 at midnight (Kiritimati, UTC+14) the same day: why `'string'` is the one safe spelling.
      if (tz === 'America/Los_Angeles') expect(got.shifted).toBeGreaterThan(0);
    },
    120_000,
  );
});
