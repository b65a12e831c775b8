/**
 * How busy the event loop has been, for the code that must tell "slow because the process is busy" from
 * "slow because what it waits for is slow": the adaptive concurrency (grow only while the loop has room)
 * and the XLSX watchdog (a stall in a busy window may be starvation, not a stuck decoder). One sampler
 * for both, so they judge "busy" the same way and degrade the same way where the runtime does not
 * measure it.
 */
import { performance } from 'node:perf_hooks';

/** The runtime's measure of the loop's utilization, where it has one (both samplers read it). */
const measure: typeof performance.eventLoopUtilization | undefined =
  typeof performance.eventLoopUtilization === 'function'
    ? performance.eventLoopUtilization.bind(performance)
    : undefined;

/**
 * A sampler of the event loop's utilization: each call returns the share of time the loop was busy
 * since the previous call (the first: since the sampler was made), 0 to 1; 0 where the runtime does not
 * measure it.
 */
export function eventLoopBusy(): () => number {
  if (measure === undefined) return () => 0;
  let last = measure();
  return () => {
    const now = measure();
    const { utilization } = measure(now, last);
    last = now;
    return Number.isFinite(utilization) ? utilization : 0;
  };
}

/** The event loop's busy ms so far, a running total; 0 where not measured. */
export function eventLoopActiveMs(): () => number {
  if (measure === undefined) return () => 0;
  return () => measure().active;
}
