/** `dqs tickers <dataset> <text>`: tickers of a dataset whose id, name or entity matches the text. */
import { checkDatasetId } from '../../transport/validate.js';
import { flag, JSON_OPTION, positionals } from '../args.js';
import type { Command } from '../command.js';
import { ExitCode } from '../exit-codes.js';
import { printJson, terminalWidth } from '../print.js';
import { cell, table } from '../text.js';

export const tickersCommand: Command = {
  name: 'tickers',
  summary: 'Search the tickers of a dataset by name or id.',
  usage: 'dqs tickers <dataset> <text> [options]',
  description:
    'Searches the tickers of a dataset: those whose id, company name or a brand (entity) name contains\n' +
    'the text, case-insensitively. An empty text ("") lists them all.',
  options: { ...JSON_OPTION },
  connects: true,
  examples: ['dqs tickers job_listings apple', 'dqs tickers job_listings "" --json | jq -r ".[].id"'],
  async run(args, ctx) {
    const [dataset, text] = positionals('tickers', args, ['dataset', 'text']);
    // Before connecting: a malformed id fails before the embedded emulator starts (and says so).
    checkDatasetId(dataset);
    const { client } = await ctx.connect();
    const tickers = await client.searchTickers(dataset!, text!, { signal: ctx.signal });
    if (flag(args.values, 'json')) {
      printJson(ctx.io.stdout, tickers);
      return ExitCode.ok;
    }
    const out = table(
      tickers,
      [
        { header: 'TICKER', value: (t) => t.id },
        { header: 'NAME', value: (t) => t.display_name },
        { header: 'COUNTRY', value: (t) => t.country },
        { header: 'SECTOR', value: (t) => t.sector },
        {
          header: 'ENTITIES',
          value: (t) =>
            Array.isArray(t.entities) ? t.entities.map((e) => cell(e?.display_name)).join(', ') : '',
        },
      ],
      terminalWidth(ctx.io.stdout),
    );
    ctx.io.stdout.write(`${out}\n`);
    if (tickers.length === 0) ctx.info(`no ticker of ${dataset} matches ${JSON.stringify(text)}`);
    return ExitCode.ok;
  },
};
