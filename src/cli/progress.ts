/**
 * The CLI's progress displays, on stderr and only when stderr is a terminal (and not `--quiet`); anywhere
 * else (a pipe, a CI log) they are no-ops, so logs get only the summary:
 * - `createProgress`: `dqs query`'s bar (rows of total, pages, rows/s and ETA);
 * - `partitionProgress`: `dqs export`'s line per finished partition under a status line.
 */
import type { PartitionReport } from '../analytics/partitioned-export.js';
import { bytes, count } from './text.js';

export interface Progress {
  /** The total is known (the query is complete). */
  start(total: number): void;
  /** Rows written so far, and pages read. */
  update(rows: number, pages: number): void;
  /** Idempotent; leaves the terminal as it was (cursor shown, bar cleared). */
  stop(): void;
}

const SILENT: Progress = { start() {}, update() {}, stop() {} };

export async function createProgress(stream: NodeJS.WriteStream, enabled: boolean): Promise<Progress> {
  if (!enabled || !stream.isTTY) return SILENT;
  const { default: cliProgress } = await import('cli-progress');
  const bar = new cliProgress.SingleBar({
    stream,
    format:
      ' {bar} {percentage}% | {rowsText}/{totalText} rows | {pages} pages | {rate} rows/s | ETA {eta_formatted}',
    barsize: 24,
    hideCursor: true,
    clearOnComplete: true,
    etaBuffer: 20,
    fps: 10,
  });
  let startedAt = 0;
  let running = false;
  return {
    start(total) {
      startedAt = performance.now();
      running = true;
      bar.start(total, 0, { rowsText: '0', totalText: count(total), pages: 0, rate: '-' });
    },
    update(rows, pages) {
      if (!running) return;
      const seconds = (performance.now() - startedAt) / 1000;
      bar.update(rows, {
        rowsText: count(rows),
        pages,
        rate: seconds > 0 ? count(rows / seconds) : '-',
      });
    },
    stop() {
      if (!running) return;
      running = false;
      bar.stop();
    },
  };
}

export interface PartitionProgressView {
  update(ticker: string, rows: number, total: number): void;
  finished(report: PartitionReport): void;
  /** Idempotent; clears the status line. */
  stop(): void;
}

const SILENT_PARTITIONS: PartitionProgressView = { update() {}, finished() {}, stop() {} };

/**
 * On a terminal (and not `--quiet`): one line per finished partition, under which a status line shows
 * partitions done, rows written and the partitions in flight with their percentage, redrawn at most 10
 * times a second. Anywhere else: nothing (logs get the summary).
 */
export async function partitionProgress(
  stream: NodeJS.WriteStream,
  enabled: boolean,
  partitions: number,
): Promise<PartitionProgressView> {
  if (!enabled || !stream.isTTY) return SILENT_PARTITIONS;
  const active = new Map<string, { rows: number; total: number }>();
  let done = 0;
  let rows = 0;
  let drawnAt = 0;
  let stopped = false;
  const status = () => {
    const inFlight = [...active]
      .map(([t, p]) => `${t} ${p.total ? Math.floor((100 * p.rows) / p.total) : 100}%`)
      .join(', ');
    let all = rows;
    for (const p of active.values()) all += p.rows;
    const line = ` ${count(done)}/${count(partitions)} partitions | ${count(all)} rows${inFlight ? ` | ${inFlight}` : ''}`;
    const width = stream.columns || 80;
    return line.length >= width ? `${line.slice(0, width - 2)}…` : line;
  };
  const draw = (force: boolean) => {
    const now = performance.now();
    if (stopped || (!force && now - drawnAt < 100)) return;
    drawnAt = now;
    stream.write(`\r\x1b[K${status()}`);
  };
  return {
    update(ticker, r, total) {
      active.set(ticker, { rows: r, total });
      draw(false);
    },
    finished(report) {
      active.delete(report.ticker);
      done++;
      if (report.status === 'written') rows += report.rows;
      const what =
        report.status === 'skipped'
          ? 'skipped (finished earlier)'
          : `${count(report.rows)} rows, ${bytes(report.bytes)}${report.truncated ? ', TRUNCATED' : ''}`;
      if (!stopped) stream.write(`\r\x1b[Kdqs: ${report.ticker}: ${what}\n`);
      draw(true);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      stream.write('\r\x1b[K');
    },
  };
}
