/** `dqs status <dataset> <query-id>`: a query's state, as the HEAD check reports it. */
import { checkDatasetId, checkQueryId } from '../../transport/validate.js';
import { flag, JSON_OPTION, positionals } from '../args.js';
import type { Command } from '../command.js';
import { ExitCode } from '../exit-codes.js';
import { printJson } from '../print.js';
import { count } from '../text.js';

export const statusCommand: Command = {
  name: 'status',
  summary: "Check a query's state, total rows, truncation and formats.",
  usage: 'dqs status <dataset> <query-id> [options]',
  description:
    'Checks a query (HEAD request): running or complete, rows, whether the row cap cut it, and the\n' +
    'formats its results can be read in. `dqs query --json` prints the query id of an export.',
  options: { ...JSON_OPTION },
  connects: true,
  examples: ['dqs status job_listings 3f2a…(64 hex characters)', 'dqs status job_listings "$QID" --json'],
  async run(args, ctx) {
    const [dataset, queryId] = positionals('status', args, ['dataset', 'query-id']);
    // Before connecting: malformed ids fail before the embedded emulator starts (and says so).
    checkDatasetId(dataset);
    checkQueryId(queryId);
    const { client } = await ctx.connect();
    const status = await client.checkQuery(dataset!, queryId!, { signal: ctx.signal });
    if (flag(args.values, 'json')) {
      printJson(ctx.io.stdout, { dataset, id: queryId, ...status });
      return ExitCode.ok;
    }
    const lines = [
      ['state', status.state],
      ['total', `${count(status.total)} rows`],
      ['truncated', status.truncated ? 'yes (the result was cut at the row cap)' : 'no'],
      ['formats', status.formats.join(', ') || '-'],
    ];
    ctx.io.stdout.write(`${lines.map(([k, v]) => `${`${k}:`.padEnd(11)}${v}`).join('\n')}\n`);
    return ExitCode.ok;
  },
};
