/**
 * Gives memory back once a load has passed: one full garbage collection when the emulator has been idle
 * for a moment after making a lot of garbage.
 *
 * Why: every page the emulator answers is a fresh Buffer (its rows serialized, sometimes compressed), and a
 * Buffer's bytes live outside V8's heap until the small object that owns them is collected. After a load
 * the process makes no more garbage, so V8 starts no collection, and the dead pages stay resident: after
 * `npm run bench:load`'s load 1, 126 MB of dead Buffers were still held 10 s later (RSS 229 MB, 54 idle);
 * a full collection freed them (RSS 87-152 MB). An emulator shared by several jobs should return near its
 * idle size between them, as the page cache's idle expiry already intends.
 *
 * V8 exposes a collection only behind `--expose-gc`. The flag is turned on just long enough to take the
 * `gc` function out of a fresh context, then off again, so no script of the host process sees a new
 * global; when even that is refused, idle memory simply waits for V8's own next collection.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Garbage (bytes of bodies made or dropped) that makes a collection worth its pause (tens of ms). */
const WORTH_COLLECTING = 8 * 1024 * 1024;
/** How long the emulator must have answered nothing: a load has passed, not paused between requests. */
const QUIET_MS = 1000;

let collector: (() => void) | null | undefined;

function fullCollection(): (() => void) | null {
  if (collector === undefined) {
    collector = null;
    try {
      const exposed = (globalThis as { gc?: unknown }).gc;
      if (typeof exposed === 'function') collector = exposed as () => void;
      else {
        setFlagsFromString('--expose-gc');
        try {
          const gc: unknown = runInNewContext('gc');
          if (typeof gc === 'function') collector = gc as () => void;
        } finally {
          setFlagsFromString('--no-expose-gc');
        }
      }
    } catch {
      collector = null;
    }
  }
  return collector;
}

export class IdleCollector {
  /** Whether the emulator is answering a request now: its own count, not a second one kept here. */
  readonly #busy: () => boolean;
  #garbage = 0;
  /** `performance.now()` when the emulator last became idle. */
  #quietSince = 0;
  /** At most one timer, re-armed from its own callback: a request costs nothing here, not a timer. */
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Collections run so far (for tests and `stats()`). */
  collections = 0;

  constructor(busy: () => boolean) {
    this.#busy = busy;
  }

  /** The emulator's last request in flight has ended. */
  quiet(): void {
    this.#quietSince = performance.now();
    this.#arm(QUIET_MS);
  }

  /** `bytes` of bodies were made (and will soon be garbage) or dropped from a cache. */
  garbage(bytes: number): void {
    this.#garbage += bytes;
    if (!this.#busy()) this.#arm(Math.max(0, this.#quietSince + QUIET_MS - performance.now()));
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number): void {
    if (this.#closed || this.#timer !== undefined || this.#garbage < WORTH_COLLECTING) return;
    this.#timer = setTimeout(() => this.#check(), ms);
    // A collector must never keep a process alive.
    this.#timer.unref();
  }

  #check(): void {
    this.#timer = undefined;
    if (this.#closed || this.#busy()) return; // the request that is running re-arms when it ends
    const left = this.#quietSince + QUIET_MS - performance.now();
    if (left > 1) {
      this.#arm(left);
      return;
    }
    const gc = fullCollection();
    this.#garbage = 0;
    if (gc === null) return;
    gc();
    this.collections++;
  }
}
