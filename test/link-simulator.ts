/**
 * A deterministic simulation of a result read over a shaped link, driving the real controllers
 * (`AdaptiveConcurrency`, `FixedConcurrency`), the link model and the page plan on a simulated clock: no
 * timers, no network. The link is what bench/wan.js shapes with the emulator: a round trip (one more for a
 * new connection), the service's time before a page's first byte (fixed + per row), each body at most one
 * connection's rate, all bodies sharing the link's rate fairly, and the client's own reading rate above
 * them (its CPU: while that binds, the event loop is busy). A service may cap requests in flight (429,
 * `Retry-After: 1`). The window is the engine's: pages in order, at most `maxPages`, bytes under a budget.
 */
import {
  AdaptiveConcurrency,
  type ConcurrencyController,
  type Congestion,
  FixedConcurrency,
} from '../src/query/concurrency.js';
import { PagePlan } from '../src/query/page-plan.js';

export interface LinkShape {
  readonly name: string;
  readonly rttMs: number;
  /** The service's time before a page's first byte: fixed, and per row. */
  readonly pageMs: number;
  readonly rowMs: number;
  /** Bytes per ms: one connection, all together, and what the client reads and decodes at most. */
  readonly connection: number;
  readonly link: number;
  readonly client: number;
  readonly rows: number;
  readonly bytesPerRow: number;
  /** Requests in flight the service accepts (more are refused, 429 with `Retry-After: 1`). */
  readonly maxInFlight?: number;
}

export interface Contender {
  readonly pageSize?: number;
  readonly concurrency?: number;
}

export interface SimRun {
  readonly ms: number;
  /** Bytes per ms, from the query's answer to the last page read. */
  readonly rate: number;
  readonly requests: number;
  readonly refused: number;
  readonly maxLimit: number;
  readonly limits: readonly { at: number; limit: number }[];
}

const WINDOW_BYTES = 128 * 1024 * 1024;
const FIRST_ROWS = 1000;

interface Request {
  seq: number;
  page: Page;
  /** When its headers come (or its refusal), and then the body's bytes still to come. */
  headersAt: number;
  left: number;
  answered: boolean;
  refused: boolean;
  /** Requests out when it was sent, itself included. */
  level: number;
  rate: number;
}

interface Page {
  start: number;
  rows: number;
  bytes: number;
  done: boolean;
  /** When a refused request of it may go again. */
  retryAt?: number;
}

export function simulate(shape: LinkShape, contender: Contender = {}, trace?: string[]): SimRun {
  const controller: ConcurrencyController =
    contender.concurrency === undefined
      ? new AdaptiveConcurrency({ max: 64 })
      : new FixedConcurrency(contender.concurrency);
  let now = 0;
  const plan = new PagePlan(
    1,
    shape.rows,
    contender.pageSize ?? 10_000,
    contender.pageSize === undefined
      ? {
          link: controller.link,
          now: () => now,
          windowBytes: WINDOW_BYTES,
          rateLimited: () => false,
          scarce: () => controller.capped,
        }
      : undefined,
  );
  // The query's own first page, read alone on the query's connection before anything else.
  const firstBytes = FIRST_ROWS * shape.bytesPerRow;
  const firstWait = shape.rttMs + shape.pageMs + shape.rowMs * FIRST_ROWS;
  const firstBody = firstBytes / Math.min(shape.connection, shape.client);
  now = 2 * shape.rttMs + firstWait + firstBody; // the POST (a new connection), then the page
  const began = now;
  plan.learn({ parts: [], rowCount: FIRST_ROWS, bytes: firstBytes, requests: 1 });
  plan.skip({ start: 1, limit: FIRST_ROWS });
  controller.firstPage({ waitMs: firstWait, bodyMs: firstBody }, now);

  let busyMs = 0;
  let idle = 1;
  const window: Page[] = []; // started and not yet taken, in order
  const out: Request[] = [];
  const retries: Page[] = []; // refused pages waiting to go again (before new pages)
  let requests = 0;
  let refused = 0;
  let doneBytes = 0;
  const limits: { at: number; limit: number }[] = [{ at: now, limit: controller.limit }];

  const send = (page: Page) => {
    requests++;
    const fresh = idle === 0;
    if (!fresh) idle--;
    const connect = fresh ? shape.rttMs : 0;
    const level = out.length + 1;
    const refuse = shape.maxInFlight !== undefined && level > shape.maxInFlight;
    const seq = controller.sent(now, busyMs);
    trace?.push(
      `${now.toFixed(0)} send ${page.start}+${page.rows}${fresh ? ' new' : ''} limit ${controller.limit} out ${out.length}`,
    );
    const wait = refuse ? shape.rttMs : shape.rttMs + shape.pageMs + shape.rowMs * page.rows;
    out.push({
      seq,
      page,
      headersAt: now + connect + wait,
      left: page.bytes,
      answered: false,
      refused: refuse,
      level,
      rate: 0,
    });
  };
  const fill = () => {
    for (;;) {
      if (out.length >= controller.limit) return;
      const again = retries.findIndex((p) => (p.retryAt ?? 0) <= now);
      if (again >= 0) {
        send(retries.splice(again, 1)[0]!);
        continue;
      }
      const maxPages = Math.max(controller.limit + 2, 2 * controller.limit);
      if (window.length >= maxPages) return;
      const held = window.reduce((sum, p) => sum + p.bytes, 0);
      if (window.length > 0 && held + (plan.pageBytes ?? 0) > WINDOW_BYTES) return;
      const range = plan.next();
      if (range === undefined) return;
      const page: Page = {
        start: range.start,
        rows: range.limit,
        bytes: range.limit * shape.bytesPerRow,
        done: false,
      };
      window.push(page);
      send(page);
    }
  };
  /** Rates of the bodies now arriving: max-min fair shares of the link, each at most a connection's. */
  const share = () => {
    const bodies = out.filter((r) => r.answered && !r.refused && r.left > 0);
    const cap = Math.min(shape.link, shape.client);
    const left = cap;
    const open = bodies.length;
    // Every body has the same cap (a connection's rate), so the fair share is the same for all.
    const each = open > 0 ? Math.min(shape.connection, left / open) : 0;
    for (const r of bodies) r.rate = each;
    const total = bodies.reduce((s, r) => s + r.rate, 0);
    return { bodies, busy: Math.min(1, total / shape.client) };
  };

  let guard = 0;
  while (doneBytes < (shape.rows - FIRST_ROWS) * shape.bytesPerRow) {
    if (++guard > 1_000_000) throw new Error(`simulation of ${shape.name} did not end`);
    fill();
    const { bodies, busy } = share();
    // The next event: headers (or a refusal), a body's end, a retry becoming due.
    let next = Number.POSITIVE_INFINITY;
    for (const r of out) if (!r.answered) next = Math.min(next, r.headersAt);
    for (const r of bodies) if (r.rate > 0) next = Math.min(next, now + r.left / r.rate);
    for (const p of retries) if ((p.retryAt ?? 0) > now) next = Math.min(next, p.retryAt!);
    if (!Number.isFinite(next)) throw new Error(`simulation of ${shape.name} is stuck`);
    const dt = next - now;
    let delivered = 0;
    for (const r of bodies) {
      const got = Math.min(r.left, r.rate * dt);
      r.left -= got;
      delivered += got;
    }
    busyMs += busy * dt;
    now = next;
    if (delivered > 0) controller.delivered(delivered);
    // Each event in turn, the window filled after each (the engine fills on every room the scheduler
    // makes, before the next answer or body is taken).
    for (const r of [...out]) {
      fill();
      if (!r.answered && r.headersAt <= now + 1e-9) {
        r.answered = true;
        if (r.refused) {
          out.splice(out.indexOf(r), 1);
          idle++;
          refused++;
          trace?.push(`${now.toFixed(0)} refused ${r.page.start} level ${r.level} limit ${controller.limit}`);
          controller.ended(r.seq, now);
          controller.congested('throttled' as Congestion, r.level, now);
          r.page.retryAt = now + 1000;
          retries.push(r.page);
          continue;
        }
        controller.answered(r.seq, r.page.rows, now, busyMs, out.length >= controller.limit);
      } else if (r.answered && r.left <= 1e-6) {
        out.splice(out.indexOf(r), 1);
        idle++;
        controller.read(r.seq, r.page.bytes, now, busyMs);
        r.page.done = true;
        plan.learn({ parts: [], rowCount: r.page.rows, bytes: r.page.bytes, requests: 1 });
      }
    }
    while (window[0]?.done) doneBytes += window.shift()!.bytes;
    if (limits.at(-1)!.limit !== controller.limit) limits.push({ at: now, limit: controller.limit });
  }
  const ms = now - began;
  return {
    ms: now,
    rate: ((shape.rows - FIRST_ROWS) * shape.bytesPerRow) / ms,
    requests,
    refused,
    maxLimit: Math.max(...limits.map((l) => l.limit)),
    limits,
  };
}

/** The fixed settings a default is judged against (bench/wan.js's grid). */
export const GRID: readonly Contender[] = [5_000, 10_000, 25_000].flatMap((pageSize) =>
  [16, 32, 64].map((concurrency) => ({ pageSize, concurrency })),
);

/** The best of the grid on `shape`: its settings and run. */
export function bestFixed(shape: LinkShape): { contender: Contender; run: SimRun } {
  let best: { contender: Contender; run: SimRun } | undefined;
  for (const contender of GRID) {
    const run = simulate(shape, contender);
    if (best === undefined || run.ms < best.run.ms) best = { contender, run };
  }
  return best!;
}
