/**
 * The export progress bar, on stderr and only when stderr is a terminal (and not `--quiet`): rows of total,
 * pages, rows/s and ETA. Anywhere else (a pipe, a CI log) it is a no-op, so logs get only the summary.
 */
import cliProgress from 'cli-progress';
import type { ProgressEvent } from '../query/result-stream.js';
import { count } from './text.js';

export interface Progress {
  /** The total is known (the query is complete). */
  start(total: number): void;
  update(event: ProgressEvent): void;
  /** Idempotent; leaves the terminal as it was (cursor shown, bar cleared). */
  stop(): void;
}

const SILENT: Progress = { start() {}, update() {}, stop() {} };

export function createProgress(stream: NodeJS.WriteStream, enabled: boolean): Progress {
  if (!enabled || !stream.isTTY) return SILENT;
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
    update(e) {
      if (!running) return;
      const seconds = (performance.now() - startedAt) / 1000;
      bar.update(e.rows, {
        rowsText: count(e.rows),
        totalText: count(e.total),
        pages: e.pages,
        rate: seconds > 0 ? count(e.rows / seconds) : '-',
      });
    },
    stop() {
      if (!running) return;
      running = false;
      bar.stop();
    },
  };
}
