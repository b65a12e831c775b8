import { AbortError, DqsError } from './errors.js';

/** Resolves after `ms`, or rejects at once when `signal` aborts; leaves no timer behind either way. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal, 'waiting'));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!, 'waiting'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The error to reject with when `signal` fired: its reason if that is already ours, else an AbortError. */
export function abortReason(signal: AbortSignal, what: string): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof DqsError) return reason;
  return new AbortError(what, { cause: reason });
}

/**
 * A signal that fires when any of `signals` fires, or after `timeoutMs` with `onTimeout()`'s error.
 * `dispose()` removes the timer and listeners, so long-lived caller signals do not accumulate them.
 */
export function linkSignals(
  signals: readonly (AbortSignal | undefined)[],
  timeoutMs?: number,
  onTimeout?: () => Error,
): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const cleanups: (() => void)[] = [];
  for (const s of signals) {
    if (!s) continue;
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    const on = () => controller.abort(s.reason);
    s.addEventListener('abort', on, { once: true });
    cleanups.push(() => s.removeEventListener('abort', on));
  }
  if (timeoutMs !== undefined && !controller.signal.aborted) {
    const timer = setTimeout(() => controller.abort(onTimeout?.()), timeoutMs);
    cleanups.push(() => clearTimeout(timer));
  }
  return {
    signal: controller.signal,
    dispose: () => {
      for (const c of cleanups) c();
    },
  };
}
