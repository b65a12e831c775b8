/** `--help` texts, generated from the command modules so they cannot drift from the options parsed. */
import { COMMON_OPTIONS, CONNECTION_OPTIONS, type OptionSpecs } from './args.js';
import type { Command } from './command.js';

function optionLines(options: OptionSpecs): string[] {
  const rows = Object.entries(options).map(([name, spec]) => {
    const short = spec.short ? `-${spec.short}, ` : '    ';
    const arg = spec.type === 'string' ? ` ${spec.arg ?? 'VALUE'}` : '';
    const repeat = spec.multiple ? ' (repeatable)' : '';
    return [`  ${short}--${name}${arg}`, `${spec.help}${repeat}`] as const;
  });
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `${left.padEnd(width)}  ${right}`);
}

export function commandHelp(command: Command): string {
  const lines = [`Usage: ${command.usage}`, '', command.description, ''];
  if (Object.keys(command.options).length) lines.push('Options:', ...optionLines(command.options), '');
  if (command.connects) lines.push('Connection:', ...optionLines(CONNECTION_OPTIONS), '');
  lines.push('General:', ...optionLines(COMMON_OPTIONS), '');
  lines.push(
    command.examples.length > 1 ? 'Examples:' : 'Example:',
    ...command.examples.map((e) => `  ${e}`),
  );
  return `${lines.join('\n')}\n`;
}

export function mainHelp(commands: readonly Command[], version: string): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return `dqs ${version}: query the Dataset Query Service and export results (Arrow, Parquet, CSV, JSON Lines).

Usage: dqs <command> [arguments] [options]

Commands:
${commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Connection: --base-url/--api-key, else DQS_BASE_URL/DQS_API_KEY. With no address at all, the command
starts the embedded emulator (synthetic data) in-process and says so on stderr.

Exit codes: 0 ok, 1 unexpected, 2 usage, 3 auth, 4 not found, 5 service or network, 6 unreadable
answer, 7 local file or port, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).

Run \`dqs <command> --help\` for a command's options and an example; \`dqs --version\` for the version.

Example:
  dqs query job_listings --ticker nasdaq:aapl --out aapl.parquet
`;
}
