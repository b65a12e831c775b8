/**
 * Ctrl-C and SIGTERM as an AbortSignal. The first signal aborts (in-flight requests stop, the temporary
 * file is removed, the command returns its exit code); a second one exits at once, for a command stuck in
 * cleanup. Temporary files of `core/safe-file` are removed on that exit too.
 */
import { Interrupted } from './errors.js';

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
  const onInt = () => handler('SIGINT');
  const onTerm = () => handler('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  return {
    signal: controller.signal,
    dispose() {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
    },
  };
}
