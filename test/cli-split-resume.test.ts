/**
 * Resumable split reads (issue #46, point 3), the built CLI: `dqs query … --split-truncated --out x`
 * killed with SIGKILL at 25, 50 and 75 % of its page requests, then run again with the same command,
 * writes a file byte-identical to an uninterrupted run's, and its requests are at most those the parts
 * not finished at the kill needed in the uninterrupted run, plus 2 (the whole list's POST and first page).
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, queryInfo, type RequestRecord, startEmulator } from '../src/emulator/index.js';
import { ensureBuilt, finishCli, type Run, startCli } from './cli-helpers.js';

const KEY = 'cli-split-resume-key';
const DATASET = 'store_locations';
/** 8 tickers of store_locations, 2,115 rows in all; nyse:bac alone has 420. */
const TICKERS = [
  'nasdaq:aapl',
  'nasdaq:amzn',
  'nasdaq:cost',
  'nasdaq:sbux',
  'nasdaq:tsla',
  'nyse:bac',
  'nyse:cmg',
  'nyse:dis',
];
const ALL = TICKERS.reduce((n, t) => n + queryInfo(DATASET, { tickers: [t] }).total, 0);
/** Every ticker fits; the list splits into 4 parts or more. */
const CAP = 500;
/**
 * A part is finished at the kill when its last page was answered this long before it: time for the
 * CLI to convert, write and commit the part's entry (a few ms; generous for a loaded machine).
 */
const SETTLE_MS = 300;

let work: string;
let emulator: Emulator;

beforeAll(async () => {
  ensureBuilt();
  work = await mkdtemp(join(tmpdir(), 'dqs-cli-split-resume-'));
  await writeFile(join(work, 'tickers.txt'), `${TICKERS.join('\n')}\n`);
  // Slow pages and few at once: a run lasts long enough to be killed at a chosen point.
  emulator = await startEmulator({ apiKey: KEY, rowCap: CAP, pageTimeMs: 120 });
}, 120_000);

afterAll(async () => {
  await emulator?.close();
  await rm(work, { recursive: true, force: true });
});

const args = (out: string) => [
  'query',
  DATASET,
  '--tickers-file',
  'tickers.txt',
  '--split-truncated',
  '--page-size',
  '50',
  '--concurrency',
  '2',
  '--json',
  '--out',
  out,
  '--base-url',
  emulator.url,
  '--api-key',
  KEY,
];

const start = (out: string, cacheHome: string) =>
  startCli(args(out), { cwd: work, env: { XDG_CACHE_HOME: join(work, cacheHome) } });

/** A query's page GET: `GET …/query/<id>`; the id, else undefined. */
const pageOf = (r: RequestRecord) =>
  r.method === 'GET' ? /\/query\/([0-9a-f]{64})$/.exec(r.path)?.[1] : undefined;

const sha256 = async (file: string) =>
  createHash('sha256')
    .update(await readFile(join(work, file)))
    .digest('hex');

/** `dqs cache list --json`: each entry's `checkpoint` (null for a result's entry). */
async function checkpoints(cacheHome: string): Promise<({ kind: string } | null)[]> {
  const run = await finishCli(
    startCli(['cache', 'list', '--json'], { cwd: work, env: { XDG_CACHE_HOME: join(work, cacheHome) } }),
  );
  expect(run.code, run.stderr).toBe(0);
  const listed = JSON.parse(run.stdout.toString()) as {
    entries: { kind: string; checkpoint: { kind: string } | null }[];
  };
  // Not the temporary files of writers the kill cut short (the next write removes them).
  return listed.entries.filter((e) => e.kind === 'entry').map((e) => e.checkpoint);
}

interface Part {
  tickers: string[];
  queryId: string;
  total: number;
}

interface Reference {
  sha: string;
  parts: Part[];
  gets: Map<string, number>;
  pages: number;
  requests: number;
}

/** An uninterrupted run writing `ext` (its own cache): its file's sha256, its parts and requests. */
async function uninterrupted(ext: string): Promise<Reference> {
  const from = emulator.requests.length;
  const run = await finishCli(start(`full.${ext}`, `cache-full-${ext}`));
  expect(run.code, run.stderr).toBe(0);
  const seen = emulator.requests.slice(from);
  const gets = new Map<string, number>();
  for (const r of seen) {
    const id = pageOf(r);
    if (id) gets.set(id, (gets.get(id) ?? 0) + 1);
  }
  const summary = JSON.parse(run.stdout.toString()) as { rows: number; parts: Part[] };
  expect(summary.rows).toBe(ALL);
  expect(summary.parts.length).toBeGreaterThanOrEqual(4);
  if (ext === 'arrow') expect(tableFromIPC(await readFile(join(work, 'full.arrow'))).numRows).toBe(ALL);
  return {
    sha: await sha256(`full.${ext}`),
    parts: summary.parts,
    gets,
    pages: [...gets.values()].reduce((n, c) => n + c, 0),
    requests: seen.length,
  };
}

describe('dqs query --split-truncated, killed and run again', () => {
  const references = new Map<string, Promise<Reference>>();

  it.each([
    ['arrow', 0.25],
    ['arrow', 0.5],
    ['arrow', 0.75],
    ['parquet', 0.5],
  ])(
    '%s, killed at %s of its pages: the rerun writes the same bytes, asking only for the parts not finished',
    async (ext, at) => {
      if (!references.has(ext)) references.set(ext, uninterrupted(ext));
      const reference = await references.get(ext)!;
      const home = `cache-${ext}-${at}`;
      const out = `resumed-${at}.${ext}`;
      const from = emulator.requests.length;
      const child = start(out, home);
      const done = finishCli(child);
      // When each request was first seen answered (the log's status is set as its headers go out).
      const answeredAt = new Map<number, number>();
      const threshold = Math.round(at * reference.pages);
      const killedAt = await new Promise<number>((resolve) => {
        const timer = setInterval(() => {
          const seen = emulator.requests.slice(from);
          for (const r of seen)
            if (r.status !== null && !answeredAt.has(r.n)) answeredAt.set(r.n, Date.now());
          if (seen.filter((r) => pageOf(r)).length >= threshold) {
            clearInterval(timer);
            child.kill('SIGKILL');
            resolve(Date.now());
          }
        }, 2);
      });
      const killed: Run = await done;
      expect(killed.signal).toBe('SIGKILL');
      // Finished: every page GET of the part answered (as many as the uninterrupted run made) well
      // before the kill. The others' requests in the uninterrupted run: a POST and their GETs.
      const seen = emulator.requests.slice(from);
      const finished = reference.parts.filter((p) => {
        const gets = seen.filter((r) => pageOf(r) === p.queryId);
        return (
          gets.length >= reference.gets.get(p.queryId)! &&
          gets.every((r) => (answeredAt.get(r.n) ?? Number.POSITIVE_INFINITY) <= killedAt - SETTLE_MS)
        );
      });
      const unfinished = reference.parts.filter((p) => !finished.includes(p));
      const unfinishedRequests = unfinished.reduce((n, p) => n + 1 + reference.gets.get(p.queryId)!, 0);

      // What the killed run left: its checkpoint, listed as such (the plan, and the parts it finished).
      const listed = await checkpoints(home);
      expect(listed.filter((c) => c?.kind === 'plan').length).toBe(1);
      expect(listed.filter((c) => c?.kind === 'part').length).toBeGreaterThanOrEqual(finished.length);
      expect(listed).not.toContain(null);

      const rerunFrom = emulator.requests.length;
      const rerun = await finishCli(start(out, home));
      expect(rerun.code, rerun.stderr).toBe(0);
      const rerunRequests = emulator.requests.length - rerunFrom;
      const total = reference.parts.length;
      const fromCache = /went on from an interrupted run: (\d+) of/.exec(rerun.stderr)?.[1];
      console.log(
        `CLI ${ext}, kill -9 at ${at * 100} % (${threshold} of ${reference.pages} page GETs): ${finished.length} of ${total} parts finished ` +
          `${SETTLE_MS} ms before the kill, ${fromCache} served by the checkpoint; rerun ${rerunRequests} requests, ` +
          `those parts not finished ${unfinishedRequests} (+ 2 allowed), uninterrupted ${reference.requests}`,
      );
      expect(await sha256(out)).toBe(reference.sha);
      expect(rerunRequests).toBeLessThanOrEqual(unfinishedRequests + 2);
      // No page of a finished part asked again.
      const again = emulator.requests.slice(rerunFrom);
      for (const p of finished) expect(again.filter((r) => pageOf(r) === p.queryId)).toEqual([]);
      // Exactly: the parts the checkpoint served cost nothing, every other part what it cost the
      // uninterrupted run (a POST and the same pages), and the whole list's POST and first page.
      const served = reference.parts.filter((p) => !again.some((r) => pageOf(r) === p.queryId));
      expect(String(served.length)).toBe(fromCache);
      const others = reference.parts.filter((p) => !served.includes(p));
      expect(rerunRequests).toBe(2 + others.reduce((n, p) => n + 1 + reference.gets.get(p.queryId)!, 0));
      expect(rerun.stderr).toMatch(/went on from an interrupted run: \d of \d parts from the local cache/);
      // Stored whole: the split result's entry, and no checkpoint left.
      expect(await checkpoints(home)).toEqual([null]);
    },
    120_000,
  );
});
