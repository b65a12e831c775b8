/**
 * `dqs serve` runs the emulator in a child process whose C allocator gives freed memory back at once.
 *
 * Why: the emulator answers each page with a fresh Buffer of 40 KB to 40 MB. glibc's malloc serves such
 * sizes from its heap once a first one has been freed (its mmap threshold rises to the largest freed size,
 * up to 32 MiB), and memory freed in the middle of that heap stays resident. After `npm run bench:load`'s
 * load 1 the emulator had freed every page (no Buffer left after a full collection) and still held 120-180
 * MB against 56 idle; with the threshold fixed (`MALLOC_MMAP_THRESHOLD_`, which glibc reads only when a
 * process starts) each page is its own mapping, unmapped when freed: 73-89 MB after loads 1 and 3. An emulator
 * shared by several jobs should return near its idle size between them.
 *
 * The parent only supervises: it forwards Ctrl-C and SIGTERM to the child over IPC (the child ignores
 * the terminal's own copy of a Ctrl-C, which would otherwise count as a second, "exit now" signal), and
 * exits with the child's code. The child stops when the parent goes away. Elsewhere than glibc (macOS,
 * musl), or when either variable is set already, `dqs serve` runs in the process itself.
 */
import { spawn } from 'node:child_process';

/**
 * glibc's variables. Blocks of 64 KiB and more get mappings of their own, unmapped when freed, and the
 * free top of the heap goes back above 128 KiB; both fixed, so glibc's dynamic thresholds (which rise to
 * 32 MiB and 64 MiB after a load) cannot move them. Chosen with `npm run bench:load` (RSS 10 s after loads
 * 1-3: 73/120/89 MB, idle 54; 108/175/141 with 128 KiB alone) and bench/emulator.js (pages/s within 3 %
 * of the defaults, where 128 KiB alone lost 7-10 % cold).
 */
export const ALLOCATOR_ENV = { MALLOC_MMAP_THRESHOLD_: '65536', MALLOC_TRIM_THRESHOLD_: '131072' } as const;
/** Set in the child, so it knows its interrupts come from the parent. */
const SUPERVISED = 'DQS_SERVE_SUPERVISED';

/** Whether this `dqs` run should start `serve` in a tuned child instead of running it here. */
export function shouldSupervise(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  if (argv[0] !== 'serve' || argv.includes('--help') || argv.includes('-h')) return false;
  if (Object.keys(ALLOCATOR_ENV).some((name) => env[name] !== undefined) || env[SUPERVISED] !== undefined) {
    return false;
  }
  if (process.platform !== 'linux') return false;
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)
    ?.header;
  return typeof header?.glibcVersionRuntime === 'string';
}

/** Whether this process is that child. */
export function isSupervised(): boolean {
  return process.env[SUPERVISED] === '1' && typeof process.send === 'function';
}

/** Runs `dqs serve …` (this very command line) in the tuned child; resolves with its exit code. */
export function supervise(): Promise<number> {
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...ALLOCATOR_ENV, [SUPERVISED]: '1' },
  });
  const forward = (name: NodeJS.Signals) => {
    if (child.connected) child.send({ interrupt: name });
  };
  const onInt = () => forward('SIGINT');
  const onTerm = () => forward('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  return new Promise((resolve) => {
    child.once('error', (err) => {
      process.stderr.write(`dqs: cannot start the emulator process: ${err.message}\n`);
      resolve(1);
    });
    child.once('exit', (code, signal) => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      // A child killed by a signal: the shell's convention, 128 + its number.
      resolve(code ?? 128 + (signal === 'SIGKILL' ? 9 : signal === 'SIGINT' ? 2 : 15));
    });
  });
}
