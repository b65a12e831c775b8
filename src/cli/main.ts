#!/usr/bin/env node
/**
 * The `dqs` executable. Everything but process wiring lives in `run.ts`: here the real streams, the
 * interrupt signal and the exit code.
 */
import { setMaxListeners } from 'node:events';
import { onInterrupt } from './interrupt.js';
import { runCli } from './run.js';

// A reader that goes away (`dqs datasets | head -1`) is not an error of ours.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

// An export keeps up to 2 x --concurrency page requests listening on one abort signal; Node's leak
// warning (at 11) would be a false alarm printed into the user's terminal.
setMaxListeners(256);

const interrupt = onInterrupt();
const code = await runCli(
  process.argv.slice(2),
  { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env },
  interrupt.signal,
);
// Set, not `process.exit()`: stdout may still be draining into a pipe.
process.exitCode = code;
// Everything is closed by now; should a handle still hold the loop open, do not hang the shell.
setTimeout(() => process.exit(code), 2000).unref();
