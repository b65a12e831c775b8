/**
 * Ctrl-C and SIGTERM as an AbortSignal. The first signal aborts (in-flight requests stop, the temporary
 * file is removed, the command returns its exit code); a second one exits at once, for a command stuck in
 * cleanup. Temporary files of `core/safe-file` are removed on that exit too.
 */
import { Interrupted } from './errors.js';
import { isSupervised } from './serve-process.js';

export interface InterruptHandle {
  readonly signal: AbortSignal;
  /** Removes the handlers (after the command ended). */
  dispose(): void;
}

export function onInterrupt(): InterruptHandle {
  const controller = new AbortController();
  const handler = (name: 'SIGINT' | 'SIGTERM') => {
    if (controller.signal.aborted) {
      process.exit(new Interrupted(name).exitCode);
    }
    controller.abort(new Interrupted(name));
  };
  const supervised = isSupervised();
  // The process events listened to, removed together by dispose().
  const listeners: [event: string, listener: (arg?: unknown) => void][] = [
    ['SIGTERM', () => handler('SIGTERM')],
  ];
  if (!supervised) listeners.push(['SIGINT', () => handler('SIGINT')]);
  else {
    // `dqs serve`'s child (see serve-process.ts): its interrupts come from the parent, once each. The
    // terminal's own copy of a Ctrl-C reaches this process too and is ignored, or one Ctrl-C would count
    // twice. The parent gone (killed): stop as on SIGTERM, then at once.
    listeners.push(
      ['SIGINT', () => {}],
      [
        'message',
        (message: unknown) => {
          const name = (message as { interrupt?: unknown } | null)?.interrupt;
          if (name === 'SIGINT' || name === 'SIGTERM') handler(name);
        },
      ],
      [
        'disconnect',
        () => {
          handler('SIGTERM');
          setTimeout(() => handler('SIGTERM'), 2000).unref();
        },
      ],
    );
  }
  for (const [event, listener] of listeners) process.on(event, listener);
  return {
    signal: controller.signal,
    dispose() {
      for (const [event, listener] of listeners) process.off(event, listener);
      // The IPC channel would keep the event loop, and so the process, alive.
      if (supervised) process.disconnect?.();
    },
  };
}

/**
 * How long a broken pipe waits for an interrupt before it is reported as one. Ctrl-C in a terminal
 * stops the whole pipeline (`dqs query … --out - | head`): the reader's end closes as this process is
 * told to stop, and a write can fail with EPIPE a moment before the signal is handled here. The user
 * interrupted (130), not the reader (7).
 */
export const INTERRUPT_GRACE_MS = 100;

/** Whether `err` (or an error it wraps) is a write to a pipe whose reader is gone. */
export function isBrokenPipe(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if ((e as NodeJS.ErrnoException).code === 'EPIPE') return true;
  }
  return false;
}

/** Resolves once `signal` aborts or `ms` have passed, whichever comes first: whether it aborted. */
export function abortedWithin(signal: AbortSignal, ms: number): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve(signal.aborted);
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
