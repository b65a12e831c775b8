/** Writing command results to stdout. */

/** One JSON document, pretty-printed, and nothing else: what `--json` promises scripts. */
export function printJson(stdout: NodeJS.WriteStream, value: unknown): void {
  stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** The terminal's width when stdout is one; undefined for pipes and files (no cutting there). */
export function terminalWidth(stdout: NodeJS.WriteStream): number | undefined {
  return stdout.isTTY && stdout.columns ? stdout.columns : undefined;
}
