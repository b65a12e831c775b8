/**
 * Helpers of the tests that run the built `dqs` CLI as a child process, and that read what it wrote with
 * DuckDB. Kept apart from helpers.ts so that suites which need neither do not load DuckDB.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll } from 'vitest';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const MAIN = join(ROOT, 'dist', 'cli', 'main.js');

/**
 * Builds dist/ when `file` (default: the CLI's entry point) is missing, e.g. for a lone
 * `npx vitest run test/cli.test.ts` on a fresh clone (`npm test` builds in pretest).
 */
export function ensureBuilt(file: string = MAIN): void {
  if (existsSync(file)) return;
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    { cwd: ROOT, stdio: 'inherit' },
  );
}

/**
 * One result cache directory per test process: the CLI caches results by default, and a test must
 * neither read nor fill the cache of the user running it.
 */
export const TEST_CACHE_HOME = mkdtempSync(join(tmpdir(), 'dqs-test-cache-home-'));
// After the test file that imported this module (each file imports it afresh), not on the process's
// 'exit': vitest ends its fork workers with a signal, so 'exit' handlers never ran and every file that
// imported this left a directory in the temp dir.
afterAll(() => rmSync(TEST_CACHE_HOME, { recursive: true, force: true }));

/**
 * The environment of a user who has set nothing: no DQS_* from the machine running the tests, and the
 * result cache under TEST_CACHE_HOME.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('DQS_')) env[k] = v;
  return { ...env, XDG_CACHE_HOME: TEST_CACHE_HOME, ...extra };
}

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

/** Starts the built CLI in `cwd` with a clean environment (plus `env`). */
export function startCli(
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string> | undefined },
): ChildProcess {
  return spawn(process.execPath, [MAIN, ...args], {
    cwd: options.cwd,
    env: cleanEnv(options.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Collects a started CLI's output until it exits; `input` goes to its stdin, which is then closed. */
export function finishCli(child: ChildProcess, input?: string): Promise<Run> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout!.on('data', (c: Buffer) => out.push(c));
  child.stderr!.on('data', (c: Buffer) => err.push(c));
  child.stdin!.end(input);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8') }),
    );
  });
}

/** The rows of a query on an in-memory DuckDB, as JSON-compatible objects. */
export async function duck(sql: string): Promise<Record<string, unknown>[]> {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  try {
    return (await c.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

/** A `dqs serve` started as a child process, once it has printed its address. */
export interface Served {
  readonly url: string;
  readonly child: ChildProcess;
  /** Ctrl-C, then what it printed and its exit code. */
  stop(): Promise<Run>;
}

/**
 * Starts the built `dqs serve --port 0 --json ...args` and waits for the JSON document with its URL.
 * Rejects (after the child is gone) when it exits first.
 */
export async function startServe(
  args: readonly string[],
  options: { cwd?: string | undefined; env?: Record<string, string> | undefined } = {},
): Promise<Served> {
  ensureBuilt();
  const child = startCli(['serve', '--port', '0', '--json', ...args], {
    cwd: options.cwd ?? process.cwd(),
    env: options.env,
  });
  const done = finishCli(child);
  const url = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (c: Buffer) => {
      text += c.toString();
      try {
        resolve((JSON.parse(text) as { url: string }).url);
      } catch {
        // Not the whole document yet.
      }
    });
    child.once('exit', () => reject(new Error('serve exited early')));
  }).catch(async (error: unknown) => {
    await done;
    throw error;
  });
  return {
    url,
    child,
    stop() {
      child.kill('SIGINT');
      return done;
    },
  };
}
