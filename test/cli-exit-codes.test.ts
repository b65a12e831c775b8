/**
 * Every row of docs/cli.md's exit-code table, each by a run of the built `dqs` that ends that way (row 1,
 * a bug, by the reporter that maps any unknown failure to it). The rows are read from the document, so a
 * row added there without a case here fails.
 *
 * Also the interrupt when stdout is what the abort interrupts: Ctrl-C on `--out - --as csv` exited 7
 * with "cannot write stdout: The operation was aborted." in 5 of 5 runs, because the pipeline's abort
 * destroys stdout and stdout's error handler took that for a write failure.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../src/cli/exit-codes.js';
import { report } from '../src/cli/report.js';
import { type Emulator, startEmulator } from '../src/emulator/index.js';
import { ensureBuilt, finishCli, ROOT, type Run, startCli } from './cli-helpers.js';

const KEY = 'exit-codes-key-41b7';

let work: string;
let emulator: Emulator;
/** Answers every request with 200 and a body that is not JSON. */
let garbled: { url: string; close(): Promise<void> };
/** A port nothing listens on (bound, then closed). */
let closedUrl: string;

beforeAll(async () => {
  ensureBuilt();
  work = await mkdtemp(join(tmpdir(), 'dqs-exit-codes-'));
  emulator = await startEmulator({ apiKey: KEY });
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"this is": not json');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  garbled = {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedUrl = `http://127.0.0.1:${(probe.address() as { port: number }).port}`;
  await new Promise((resolve) => probe.close(resolve));
}, 120_000);

afterAll(async () => {
  await emulator?.close();
  await garbled?.close();
  await rm(work, { recursive: true, force: true });
});

function conn(url = emulator.url, key = KEY): string[] {
  return ['--base-url', url, '--api-key', key];
}

function dqs(args: readonly string[]): Promise<Run> {
  return finishCli(startCli(args, { cwd: work }));
}

/** The codes of docs/cli.md's "Exit codes" table, in its order. */
function documentedCodes(): number[] {
  const doc = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Exit codes'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| Code |')));
  return [...table.matchAll(/^\| (\d+) \|/gm)].map((m) => Number(m[1]));
}

/** `dqs query` of all job_listings to stdout as CSV, in pages of 500 rows one at a time, from `emu`. */
function csvToStdout(emu: Emulator) {
  return startCli(
    [
      'query',
      'job_listings',
      '--out',
      '-',
      '--as',
      'csv',
      '--page-size',
      '500',
      '--concurrency',
      '1',
      '--no-cache',
      ...conn(emu.url),
    ],
    { cwd: work },
  );
}

/** Runs a Ctrl-C (or SIGTERM) into `dqs query --out - --as csv` once rows are flowing on stdout. */
async function interruptStdout(signal: 'SIGINT' | 'SIGTERM', slow: Emulator): Promise<Run> {
  const child = csvToStdout(slow);
  const done = finishCli(child);
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  child.kill(signal);
  return done;
}

/** An emulator whose pages take 100 ms each: a query to stdout is still writing when the signal comes. */
function slowEmulator(): Promise<Emulator> {
  return startEmulator({
    apiKey: KEY,
    fault: (r) =>
      r.method === 'GET' && /\/query\/[0-9a-f]{64}$/.test(r.path) && r.query.limit === '500'
        ? { kind: 'delay', ms: 100 }
        : undefined,
  });
}

const CASES: Record<number, { what: string; run: () => Promise<Run | { code: number; stderr: string }> }> = {
  0: { what: 'dqs datasets', run: () => dqs(['datasets', ...conn()]) },
  1: {
    // A bug cannot be provoked on purpose: the reporter's mapping of an unknown failure stands in.
    what: 'an error that is no known kind (the reporter)',
    run: async () => {
      const r = report(new TypeError('x is not a function'), { command: 'query', secrets: [] });
      return { code: r.exitCode, stderr: r.line };
    },
  },
  2: { what: 'an unknown option', run: () => dqs(['datasets', '--no-such-option']) },
  3: { what: 'a wrong key', run: () => dqs(['datasets', ...conn(emulator.url, 'wrong')]) },
  4: { what: 'an unknown dataset', run: () => dqs(['dataset', 'no_such_dataset', ...conn()]) },
  5: { what: 'a connection refused', run: () => dqs(['datasets', ...conn(closedUrl)]) },
  6: { what: 'an answer that is not JSON', run: () => dqs(['datasets', ...conn(garbled.url)]) },
  7: {
    what: 'a --tickers-file that does not exist',
    run: () => dqs(['query', 'job_listings', '--tickers-file', 'missing.txt', '--out', 'x.csv', ...conn()]),
  },
  130: {
    what: 'Ctrl-C while writing to stdout',
    run: async () => {
      const slow = await slowEmulator();
      try {
        return await interruptStdout('SIGINT', slow);
      } finally {
        await slow.close();
      }
    },
  },
  143: {
    what: 'SIGTERM while writing to stdout',
    run: async () => {
      const slow = await slowEmulator();
      try {
        return await interruptStdout('SIGTERM', slow);
      } finally {
        await slow.close();
      }
    },
  },
};

describe('exit codes: one case per row of docs/cli.md', () => {
  it('the table and the cases name the same codes, and ExitCode has each', () => {
    const codes = documentedCodes();
    expect(codes).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 130, 143]);
    expect(Object.keys(CASES).map(Number)).toEqual(codes);
    expect(new Set(Object.values(ExitCode))).toEqual(new Set(codes));
  });

  it.each(Object.entries(CASES).map(([code, c]) => [Number(code), c.what, c.run] as const))(
    'exit %i: %s',
    async (code, _what, run) => {
      const r = await run();
      expect(r.code, r.stderr).toBe(code);
      if (code !== 0)
        expect(
          r.stderr
            .trim()
            .split('\n')
            .filter((l) => !l.includes('embedded emulator')),
        ).toHaveLength(1);
      if (code === 130) expect(r.stderr).toMatch(/^dqs query: interrupted \(SIGINT\)$/m);
      if (code === 143) expect(r.stderr).toMatch(/^dqs query: interrupted \(SIGTERM\)$/m);
    },
  );
  // Rows also covered elsewhere: 7 for stdout (ENOSPC, EPIPE) and files (EFBIG, EACCES) in
  // cli-local-faults.test.ts; 130/143 with --out FILE in cli.test.ts ("dqs query: interrupted") and for
  // dqs export in cli-export.test.ts.
});

describe('Ctrl-C into `--out -`: exit 130 and the "interrupted" line, every time', () => {
  it('20 of 20 runs (4 at a time)', async () => {
    const slow = await slowEmulator();
    try {
      const runs: Run[] = [];
      let left = 20;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (left-- > 0) runs.push(await interruptStdout('SIGINT', slow));
        }),
      );
      const outcomes = runs.map(
        (r) => `${r.code} ${/interrupted \(SIGINT\)/.test(r.stderr) ? 'line' : r.stderr.trim()}`,
      );
      expect(outcomes).toEqual(Array(20).fill('130 line'));
    } finally {
      await slow.close();
    }
  }, 120_000);
});

describe('Ctrl-C on `dqs query … --out - | head`: exit 130, not 7', () => {
  // Issue #47: Ctrl-C in a terminal stops the reader too, so dqs's pipe breaks (EPIPE) as its own signal
  // comes, and the write failure won: exit 7 and "cannot write stdout …" in 5 of 5 runs. Here the pipe is
  // full and a write pending when both come, in one turn: the reader's end closed, then SIGINT.
  it('5 of 5 runs: 130 and the "interrupted" line', async () => {
    const outcomes: string[] = [];
    for (let run = 0; run < 5; run++) {
      let pages = 0;
      let written: () => void = () => {};
      const enough = new Promise<void>((resolve) => {
        written = resolve;
      });
      const emu = await startEmulator({
        apiKey: KEY,
        fault: (r) => {
          // Four pages of 500 rows of CSV (~800 kB) more than a pipe holds: a write is pending.
          if (r.method === 'GET' && r.query.limit === '500' && ++pages === 5) written();
          return undefined;
        },
      });
      try {
        const child = csvToStdout(emu);
        const done = finishCli(child);
        // Not read from here on: the pipe fills and dqs's writes wait.
        child.stdout!.pause();
        await enough;
        child.stdout!.destroy();
        child.kill('SIGINT');
        const r = await done;
        outcomes.push(
          `${r.code} ${/^dqs query: interrupted \(SIGINT\)$/m.test(r.stderr) ? 'line' : r.stderr.trim()}`,
        );
      } finally {
        await emu.close();
      }
    }
    expect(outcomes).toEqual(Array(5).fill('130 line'));
  }, 120_000);
});
