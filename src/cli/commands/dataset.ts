/** `dqs dataset <id>`: one dataset's metadata and its columns. */
import { checkDatasetId } from '../../transport/validate.js';
import { flag, JSON_OPTION, positionals } from '../args.js';
import type { Command } from '../command.js';
import { ExitCode } from '../exit-codes.js';
import { printJson, terminalWidth } from '../print.js';
import { cell, count, table } from '../text.js';

export const datasetCommand: Command = {
  name: 'dataset',
  summary: "Show one dataset's metadata and columns.",
  usage: 'dqs dataset <dataset> [options]',
  description:
    'Shows a dataset: name, summary, row cap, result formats, and its columns (id, type, format, metric).',
  options: { ...JSON_OPTION },
  connects: true,
  examples: ['dqs dataset job_listings', 'dqs dataset job_listings --json | jq ".fields[].id"'],
  async run(args, ctx) {
    const [id] = positionals('dataset', args, ['dataset']);
    // Before connecting: a malformed id fails before the embedded emulator starts (and says so).
    checkDatasetId(id);
    const { client } = await ctx.connect();
    const meta = await client.getDataset(id!, { signal: ctx.signal });
    if (flag(args.values, 'json')) {
      printJson(ctx.io.stdout, meta);
      return ExitCode.ok;
    }
    const about = [
      ['id', meta.id],
      ['name', meta.display_name],
      ['summary', meta.summary],
      ['state', meta.state],
      ['companies', meta.companies_count === null ? '-' : count(meta.companies_count)],
      ['row cap', count(meta.truncate_limit)],
      ['formats', (Array.isArray(meta.formats) ? meta.formats.join(', ') : '') || '-'],
      ['blog', meta.blog_url ?? '-'],
    ] as const;
    const width = terminalWidth(ctx.io.stdout);
    const head = about.map(([k, v]) => `${`${k}:`.padEnd(11)}${cell(v)}`).join('\n');
    const columns = table(
      meta.fields,
      [
        { header: 'COLUMN', value: (f) => f.id },
        { header: 'TYPE', value: (f) => f.type },
        { header: 'FORMAT', value: (f) => f.format ?? '' },
        { header: 'METRIC', value: (f) => (f.metric ? 'yes' : '') },
        { header: 'DESCRIPTION', value: (f) => f.summary || f.display_name },
      ],
      width,
    );
    ctx.io.stdout.write(`${head}\n\n${columns}\n`);
    return ExitCode.ok;
  },
};
