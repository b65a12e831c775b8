/**
 * Typos refused, not ignored (issue #47). A misspelt option was left at its default in silence
 * (`{ pagesize: 5000 }`, `new DatasetClient({ apikey })`), and a misspelt body member was sent and ignored
 * by the service: `{ ticker: ['nasdaq:aapl'] }` queried the whole dataset, 500,000 rows, truncated. Every
 * options object and the query body now refuse an unknown key with an `InvalidArgumentError` that names
 * it and the key meant, before anything is sent; members the spec does not show go through `rawBody()`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { queryInfo } from '../src/emulator/index.js';
import {
  DatasetClient,
  exportPartitioned,
  queryEach,
  rawBody,
  toArrowIpc,
  toCsv,
  toParquet,
} from '../src/index.js';
import { invalidArgumentOf as refusal, setup } from './helpers.js';

const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

describe('a misspelt key is refused, naming the key meant, before anything is sent', () => {
  it('twelve typos: client, stream, query, query body and export options', async () => {
    const { emu, client } = await setup();
    const conn = { baseUrl: emu.url, apiKey: emu.apiKey };
    const out = mkdtempSync(join(tmpdir(), 'dqs-unknown-keys-'));
    dirs.push(out);
    // Untyped, as plain JavaScript passes them: TypeScript refuses these at compile time (below).
    const loose = (o: object) => o as never;
    const typos: [string, string, () => unknown][] = [
      ['apikey', 'apiKey', () => new DatasetClient(loose({ baseUrl: emu.url, apikey: 'k' }))],
      ['baseurl', 'baseUrl', () => new DatasetClient(loose({ baseurl: emu.url, apiKey: 'k' }))],
      ['retry.retrys', 'retry.retries', () => new DatasetClient(loose({ ...conn, retry: { retrys: 2 } }))],
      ['pagesize', 'pageSize', () => client.stream('job_listings', {}, loose({ pagesize: 5000 }))],
      [
        'batchsize',
        'batchSize',
        () => client.query('job_listings').then((r) => r.toTable(loose({ batchsize: 10 }))),
      ],
      [
        'concurency',
        'concurrency',
        () => client.query('job_listings').then((r) => r.stream(loose({ concurency: 2 }))),
      ],
      ['chekTickers', 'checkTickers', () => client.query('job_listings', {}, loose({ chekTickers: 'warn' }))],
      ['body.ticker', 'body.tickers', () => client.query('job_listings', loose({ ticker: ['nasdaq:aapl'] }))],
      [
        'body.Tickers',
        'body.tickers',
        () => client.stream('job_listings', loose({ Tickers: ['nasdaq:aapl'] })),
      ],
      ['rowGroupsize', 'rowGroupSize', () => toParquet(loose({ rowGroupsize: 1000 }))],
      ['nulltext', 'nullText', () => toCsv(loose({ nulltext: 'NULL' }))],
      [
        'outdir',
        'outDir',
        () =>
          exportPartitioned(
            client,
            loose({ dataset: 'job_listings', tickers: ['nasdaq:aapl'], outdir: out }),
          ),
      ],
    ];
    const before = emu.requests.length;
    for (const [key, meant, run] of typos) {
      const error = await refusal(run);
      expect(error.argument).toBe(key);
      expect(error.code).toBe('DQS_INVALID_ARGUMENT');
      expect(error.message).toContain(`\`${key}\`: did you mean \`${meant}\`?`);
    }
    // The two queries whose results the stream typos read were sent; the typos themselves sent nothing.
    expect(emu.requests.slice(before).filter((r) => r.method === 'POST')).toHaveLength(2);
  });

  it('a key like none of the known ones lists them; nested options name their path', async () => {
    const error = await refusal(() => toArrowIpc({ format: 'file', compression: 'zstd' } as never));
    expect(error.message).toBe(
      'Invalid `compression`: not one of the options of `toArrowIpc()` (`format`, `batchSize`)',
    );
    const { client } = await setup();
    const nested = await refusal(() =>
      queryEach(client, {
        datasets: ['job_listings'],
        tickers: ['nasdaq:aapl'],
        stream: { pageSise: 5 },
      } as never).next(),
    );
    expect(nested.message).toMatch(/^Invalid `stream.pageSise`: did you mean `stream.pageSize`\?/);
    const cache = await refusal(
      () => new DatasetClient({ baseUrl: 'http://127.0.0.1:1', cache: { maxage: 5 } } as never),
    );
    expect(cache.message).toMatch(/^Invalid `cache.maxage`: did you mean `cache.maxAge`\?/);
  });

  it('rawBody() sends members the spec does not show, as given, and still checks the tickers', async () => {
    const { emu, client } = await setup();
    const body = { tickers: ['nasdaq:aapl'], filters: [{ field: 'title', value: 'Engineer' }] };
    const refused = await refusal(() => client.query('job_listings', body as never));
    expect(refused.message).toMatch(
      /^Invalid `body.filters`: not one of the members of the query body the spec shows/,
    );
    expect(refused.message).toContain('rawBody({ … })');
    const result = await client.query('job_listings', rawBody(body));
    // The query id is the sha256 of the canonical body: the emulator received the filters.
    expect(result.id).toBe(queryInfo('job_listings', body).id);
    expect(result.id).not.toBe(queryInfo('job_listings', { tickers: ['nasdaq:aapl'] }).id);
    const bad = await refusal(() => client.query('job_listings', rawBody({ tickers: ['AAPL'] })));
    expect(bad.argument).toBe('body.tickers[0]');
    expect(emu.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('TypeScript rejects the same typos at compile time (checked by npm run typecheck)', () => {
    const client = new DatasetClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' });
    const compileOnly = () => {
      // @ts-expect-error `ticker` is not a member of QueryBody
      void client.query('job_listings', { ticker: ['nasdaq:aapl'] });
      // @ts-expect-error `filters` is sent only through rawBody()
      void client.query('job_listings', { tickers: ['nasdaq:aapl'], filters: [] });
      // @ts-expect-error `pagesize` is not a stream option
      client.stream('job_listings', {}, { pagesize: 5000 });
      // @ts-expect-error `apikey` is not a client option
      new DatasetClient({ apikey: 'k' });
      // @ts-expect-error `rowGroupsize` is not a Parquet option
      toParquet({ rowGroupsize: 10 });
    };
    expect(typeof compileOnly).toBe('function');
    return client.close();
  });
});
