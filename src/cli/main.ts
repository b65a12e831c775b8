#!/usr/bin/env node
/**
 * The `dqs` executable. Everything but process wiring lives in `run.ts`: here the real streams, the
 * interrupt signal and the exit code.
 */
import { setMaxListeners } from 'node:events';
import { systemReason } from './errors.js';
import { ExitCode } from './exit-codes.js';
import {
  abortedWithin,
  INTERRUPT_GRACE_MS,
  type InterruptHandle,
  isBrokenPipe,
  onInterrupt,
} from './interrupt.js';
import { isSupervised, shouldSupervise, supervise } from './serve-process.js';

// stdout failing (a full device, a reader that went away: `dqs datasets | head -1`) is a local fault:
// exit 7 with one line, whatever was being printed. Not everything reached the reader, and a script
// under `set -o pipefail` should know. A `--out -` pipeline reports the same error through its own path;
// whichever comes first ends the process, with one line either way.
// Not an abort, though: Ctrl-C (or SIGTERM) aborts a `--out -` pipeline, which destroys stdout with an
// AbortError. That is the interrupt, not a write failure, and the command reports it (130/143).
// Nor a pipe the interrupt closed: Ctrl-C in a terminal stops the reader too (`… --out - | head`), and
// a write can fail with EPIPE a moment before this process handles its own signal. A broken pipe waits
// a little for the interrupt (interrupt.ts); once it has come, the command reports it. A command that
// ended meanwhile with a failure has reported it.
let interrupt: InterruptHandle | undefined;
process.stdout.on('error', async (err: NodeJS.ErrnoException) => {
  if (err.name === 'AbortError') return;
  if (interrupt && (await abortedWithin(interrupt.signal, isBrokenPipe(err) ? INTERRUPT_GRACE_MS : 0)))
    return;
  const code = Number(process.exitCode ?? ExitCode.ok);
  if (code !== ExitCode.ok) process.exit(code);
  process.stderr.write(`dqs: cannot write stdout: ${systemReason(err)}.\n`);
  process.exit(ExitCode.local);
});

// An export keeps up to 2 x --concurrency page requests listening on one abort signal; Node's leak
// warning (at 11) would be a false alarm printed into the user's terminal.
setMaxListeners(256);

// `dqs serve` runs in a child with a tuned allocator (serve-process.ts); this process only supervises.
async function run(): Promise<number> {
  if (shouldSupervise(process.argv.slice(2), process.env)) return supervise();
  // The handlers first, the commands after: a Ctrl-C while the commands' modules load (a few hundred ms
  // on a busy machine) killed the process by the default action, exit 130 without the "interrupted" line.
  interrupt = onInterrupt();
  const { runCli } = await import('./run.js');
  const exitCode = await runCli(
    process.argv.slice(2),
    { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env },
    interrupt.signal,
  );
  // The supervised child lets go of its IPC channel, which would hold the process open.
  if (isSupervised()) interrupt.dispose();
  return exitCode;
}
const code = await run();
// Set, not `process.exit()`: stdout may still be draining into a pipe.
process.exitCode = code;
// Everything is closed by now; should a handle still hold the loop open, do not hang the shell.
setTimeout(() => process.exit(code), 2000).unref();
