/**
 * Dates and timestamps must never depend on the process's time zone. TZ is read once per process, so each
 * zone runs in a child `node` against the built dist/ (rebuilt here when it is missing or older than the
 * sources; `npm test` builds first anyway).
 */

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const dist = join(root, 'dist', 'convert', 'index.js');

function newestSource(): number {
  return Math.max(
    ...['src/convert', 'src/core'].flatMap((dir) =>
      readdirSync(join(root, dir)).map((f) => statSync(join(root, dir, f)).mtimeMs),
    ),
  );
}

beforeAll(() => {
  if (!existsSync(dist) || statSync(dist).mtimeMs < newestSource()) {
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
  }
}, 120_000);

const script = `
import { planColumns, RecordBatchBuilder, makeRowFactory } from ${JSON.stringify(dist)};
import { tableFromIPC, tableToIPC, Table } from 'apache-arrow';
const f = (id, type) => ({ id, display_name: id, summary: '', type, format: null, metric: false, length: 0, options: [] });
const plan = planColumns([f('d', 'date'), f('ts', 'datetime')]);
const rows = [['20240310', '20240310T023000Z'], ['20241103', '20241103T013000Z'], ['19700101', '19691231T235959Z'], ['20240229', '20240229T000000Z']];
const builder = new RecordBatchBuilder(plan);
builder.appendRows(rows, 1);
const table = tableFromIPC(tableToIPC(new Table([builder.flush()]), 'file'));
const toRow = makeRowFactory(plan);
console.log(JSON.stringify({
  arrow: table.toArray().map((r) => [r.d, r.ts]),
  rows: rows.map((r, i) => { const o = toRow(r, i + 1); return [o.d.toISOString(), o.ts.toISOString()]; }),
}));
`;

function runIn(tz: string): unknown {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    env: { ...process.env, TZ: tz },
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

describe('no time zone shift', () => {
  const expected = {
    arrow: [
      [Date.UTC(2024, 2, 10), Date.UTC(2024, 2, 10, 2, 30)],
      [Date.UTC(2024, 10, 3), Date.UTC(2024, 10, 3, 1, 30)],
      [0, -1000],
      [Date.UTC(2024, 1, 29), Date.UTC(2024, 1, 29)],
    ],
    rows: [
      ['2024-03-10T00:00:00.000Z', '2024-03-10T02:30:00.000Z'],
      ['2024-11-03T00:00:00.000Z', '2024-11-03T01:30:00.000Z'],
      ['1970-01-01T00:00:00.000Z', '1969-12-31T23:59:59.000Z'],
      ['2024-02-29T00:00:00.000Z', '2024-02-29T00:00:00.000Z'],
    ],
  };

  // 2024-03-10 02:30 and 2024-11-03 01:30 are a missing and a repeated hour in New York.
  it.each(['UTC', 'America/New_York', 'Asia/Tokyo', 'Pacific/Kiritimati'])(
    'gives UTC values under TZ=%s',
    (tz) => {
      expect(runIn(tz)).toEqual(expected);
    },
  );
});
