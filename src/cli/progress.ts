/**
 * The export progress bar, on stderr and only when stderr is a terminal (and not `--quiet`): rows of total,
 * pages, rows/s and ETA. Anywhere else (a pipe, a CI log) it is a no-op, so logs get only the summary.
 */
import { count } from './text.js';

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
