// A runnable tour of the library against the embedded emulator: `npm run build && node examples/quick.mjs`.
// Against the real service, drop the emulator and pass your baseUrl/apiKey (or set DQS_BASE_URL/DQS_API_KEY).
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { startEmulator } from '../dist/emulator/index.js';
import { DatasetClient, toArrowIpc } from '../dist/index.js';

const emu = await startEmulator({ port: 0 });
const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey });
try {
  const datasets = await client.listDatasets();
  console.log('datasets:', datasets.map((d) => d.id).join(', '));

  const found = await client.searchTickers('job_listings', 'apple');
  console.log('tickers matching "apple":', found.map((t) => `${t.id} (${t.display_name})`).join(', '));

  const result = await client.query('job_listings', { tickers: ['nasdaq:aapl'] });
  console.log(`query ${result.id.slice(0, 12)}…: ${result.total} rows, truncated=${result.truncated}`);

  let rows = 0;
  for await (const batch of result.stream({ pageSize: 5000 })) rows += batch.numRows;
  console.log('streamed rows:', rows);

  const table = await result.toTable();
  const first = table.get(0)?.toJSON();
  console.log('first row:', {
    ticker: first?.ticker,
    title: first?.title,
    posted_date: new Date(first?.posted_date),
  });

  const [row] = await (await client.query('store_locations', { tickers: ['nyse:wmt'] })).toArray();
  console.log('a store as a row object:', row);

  const path = join(tmpdir(), 'aapl-example.arrow');
  await pipeline(
    client.stream('job_listings', { tickers: ['nasdaq:aapl'] }),
    toArrowIpc(),
    createWriteStream(path),
  );
  console.log('wrote', path);
  await rm(path);
} finally {
  await client.close();
  await emu.close();
}
