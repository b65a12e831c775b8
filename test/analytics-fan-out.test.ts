/**
 * queryEach(): one query per (dataset, ticker), a few at once through one client whose adaptive
 * scheduler all their pages share; each small query is two requests.
 */
import { describe, expect, it } from 'vitest';
import { queryTotal } from '../src/emulator/index.js';
import { type DqsError, queryEach } from '../src/index.js';
import { expectRejects, setup } from './helpers.js';

const DATASETS = ['web_traffic', 'store_locations'];
const TICKERS = ['nasdaq:aapl', 'nasdaq:msft', 'tyo:7203', 'nyse:ibm'];

describe('queryEach', () => {
  it('yields every (dataset, ticker) table with the emulator rows, two requests per query, at most `concurrency` at once', async () => {
    const { emu, client } = await setup({ latencyMs: 20 });
    // Queries in progress, seen from the client (each small query is its POST and one GET).
    const query = client.query.bind(client);
    let open = 0;
    let most = 0;
    client.query = async (...args: Parameters<typeof query>) => {
      most = Math.max(most, ++open);
      try {
        return await query(...args);
      } finally {
        open--;
      }
    };
    const seen = new Map<string, number>();
    for await (const { dataset, ticker, table, result } of queryEach(client, {
      datasets: DATASETS,
      tickers: TICKERS,
      concurrency: 3,
    })) {
      expect(table.numRows).toBe(result.total);
      expect(table.schema.fields.map((f) => f.name)).toEqual(result.fields.map((f) => f.id));
      seen.set(`${dataset} ${ticker}`, table.numRows);
    }
    const expected = new Map(
      DATASETS.flatMap((d) => TICKERS.map((t) => [`${d} ${t}`, queryTotal(d, { tickers: [t] })] as const)),
    );
    expect(seen).toEqual(expected);
    // POST + one GET per query with rows; an empty result's GET only carries descriptors, and is spared
    // once a result of its dataset has shown them (which of the three empty ones: the timing's choice).
    const withRows = [...expected.values()].filter((n) => n > 0).length;
    expect(emu.requests.filter((r) => r.method === 'POST')).toHaveLength(8);
    const gets = emu.requests.filter((r) => r.method === 'GET').length;
    expect(gets).toBeGreaterThanOrEqual(withRows);
    expect(gets).toBeLessThanOrEqual(8);
    expect(emu.requests.filter((r) => r.method === 'HEAD')).toHaveLength(0);
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThan(1);
  });

  it('the first failure stops the others and is thrown; break stops them too', async () => {
    const { client } = await setup();
    await expectRejects<DqsError>(
      (async () => {
        for await (const _ of queryEach(client, { datasets: ['no_such_dataset'], tickers: TICKERS })) {
          // nothing
        }
      })(),
      (e) => expect(e.code).toBe('DQS_NOT_FOUND'),
    );
    let n = 0;
    for await (const _ of queryEach(client, { datasets: DATASETS, tickers: TICKERS, concurrency: 2 })) {
      if (++n === 2) break;
    }
    expect(n).toBe(2);
  });

  it('rejects bad options before any request', () => {
    const gen = queryEach({} as never, { datasets: [], tickers: ['nasdaq:aapl'] });
    return expect(gen.next()).rejects.toMatchObject({ code: 'DQS_INVALID_ARGUMENT', argument: 'datasets' });
  });
});
