// The notebook tour (examples/notebook.ipynb, docs/analytics.md) as a script, against the embedded
// emulator: `npm run build && node examples/notebook.mjs`. A test runs it, so the recipes stay true.
// Each "cell" below is one cell of the notebook; in a kernel the last expression of a cell is displayed
// through its Jupyter hook, here it is printed through util.inspect (the same text a plain REPL shows).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import * as aq from 'arquero';
import { startEmulator } from '../dist/emulator/index.js';
import { DatasetClient, exportPartitioned, preview, toDuckDB, toPolars } from '../dist/index.js';

const emu = await startEmulator({ port: 0 });
const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey });
const lake = await mkdtemp(join(tmpdir(), 'dqs-notebook-'));
try {
  // Cell 1: a query result shows its columns and size without fetching a row.
  const result = await client.query('job_listings', { tickers: ['nasdaq:aapl', 'nyse:wmt'] });
  console.log(result);

  // Cell 2: the first rows, as a table (HTML in a notebook, aligned text here).
  console.log(await preview(result, { rows: 5 }));

  // Cell 3: the whole result as Arrow, then a preview of the table.
  const table = await result.toTable({ pageSize: 5000 });
  console.log(preview(table, { rows: 3, maxStringLength: 24 }));

  // Cell 4: Polars.
  const df = await toPolars(table);
  console.log('polars:', df.groupBy('ticker').len().sort('ticker').toRecords());

  // Cell 5: arquero, on the Arrow columns as they are.
  const dt = aq.fromArrow(table);
  console.log('arquero:', dt.groupby('ticker').count().orderby('ticker').objects());

  // Cell 6: DuckDB, straight from the network (streamed through Parquet, never whole in memory).
  const duck = await (await DuckDBInstance.create(':memory:')).connect();
  const { rows } = await toDuckDB(duck, client.stream('job_listings', { tickers: ['nasdaq:aapl'] }), 'jobs');
  const top = await duck.runAndReadAll(
    'SELECT location, count(*)::INTEGER AS n FROM jobs GROUP BY location ORDER BY n DESC, location LIMIT 3',
  );
  console.log(`duckdb: ${rows} rows loaded; top locations:`, top.getRowObjectsJson());

  // Cell 7: fan-out into a Hive-partitioned dataset, then one SQL query over all of it.
  const tickers = ['nasdaq:aapl', 'nyse:wmt', 'lse:tsco', 'private:aldi'];
  const report = await exportPartitioned(client, {
    dataset: 'web_traffic',
    tickers,
    outDir: lake,
    onPartition: (p) => console.log(`partition ${p.ticker}: ${p.status}, ${p.rows} rows`),
  });
  const perTicker = await duck.runAndReadAll(
    `SELECT ticker, count(*)::INTEGER AS n FROM read_parquet('${report.root}/*/*.parquet', hive_partitioning = true)
     GROUP BY ticker ORDER BY ticker`,
  );
  console.log('lake:', perTicker.getRowObjectsJson());
  duck.closeSync();
} finally {
  await client.close();
  await emu.close();
  await rm(lake, { recursive: true, force: true });
}
