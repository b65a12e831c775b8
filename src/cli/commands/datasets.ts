/** `dqs datasets [--ticker T]`: the datasets, or those that cover one ticker. */
import { flag, JSON_OPTION, positionals, str } from '../args.js';
import type { Command } from '../command.js';
import { ExitCode } from '../exit-codes.js';
import { printJson, terminalWidth } from '../print.js';
import { table } from '../text.js';
import { checkTickerArgs } from '../tickers.js';

export const datasetsCommand: Command = {
  name: 'datasets',
  summary: 'List the datasets (or those covering one ticker).',
  usage: 'dqs datasets [--ticker TICKER] [options]',
  description: 'Lists the datasets of the service: id, name, companies covered, state and summary.',
  options: {
    ticker: {
      type: 'string',
      arg: 'TICKER',
      help: 'Only datasets with data for this ticker, e.g. nasdaq:aapl.',
    },
    ...JSON_OPTION,
  },
  connects: true,
  examples: ['dqs datasets', 'dqs datasets --ticker nasdaq:aapl --json'],
  async run(args, ctx) {
    positionals('datasets', args, []);
    const ticker = str(args.values, 'ticker');
    if (ticker !== undefined) checkTickerArgs([ticker], 'datasets');
    const { client } = await ctx.connect();
    const datasets = await client.listDatasets({
      signal: ctx.signal,
      ...(ticker !== undefined ? { ticker } : {}),
    });
    if (flag(args.values, 'json')) {
      printJson(ctx.io.stdout, datasets);
      return ExitCode.ok;
    }
    const text = table(
      datasets,
      [
        { header: 'ID', value: (d) => d.id },
        { header: 'NAME', value: (d) => d.display_name },
        {
          header: 'COMPANIES',
          value: (d) => (d.companies_count === null ? '-' : String(d.companies_count)),
          right: true,
        },
        { header: 'STATE', value: (d) => d.state },
        { header: 'SUMMARY', value: (d) => d.summary },
      ],
      terminalWidth(ctx.io.stdout),
    );
    ctx.io.stdout.write(`${text}\n`);
    if (datasets.length === 0)
      ctx.info(ticker ? `no dataset covers ${ticker}` : 'the service lists no datasets');
    return ExitCode.ok;
  },
};
