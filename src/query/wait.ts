/**
 * Creating a query and waiting for it: POST, then (only while it runs) HEAD with a slowly growing pause
 * and jitter: from 50 ms, x1.25 per check, at most 2 s, or what the HEAD's `Retry-After` asks. A query
 * that runs 0.15-3 s is seen within ~25 % of its end, and a long one costs one HEAD per 2 s.
 */

import { linkSignals, sleep } from '../core/abortable.js';
import { KNOWN_QUERY_STATES, QueryFailedError, TimeoutError } from '../core/errors.js';
import type { QueryHandle, QueryStatus, WireBody } from '../core/wire.js';
import { inPhase, type QueryTelemetry } from '../telemetry/telemetry.js';
import type { EndpointClient } from '../transport/endpoints.js';

export interface WaitOptions {
  readonly signal?: AbortSignal | undefined;
  /** Overall limit for creating and waiting, in ms. @default 10 minutes */
  readonly timeoutMs?: number | undefined;
  /** First pause between checks, in ms. @default 50 */
  readonly pollMinMs?: number | undefined;
  /** Longest pause between checks, in ms (a longer `Retry-After` on a check is still honoured). @default 2000 */
  readonly pollMaxMs?: number | undefined;
  /** Called with each status seen while waiting (for progress displays). */
  readonly onStatus?: ((status: QueryStatus) => void) | undefined;
}

/** Every option of `WaitOptions`, for the checks of unknown keys (the compiler keeps it complete). */
export const WAIT_OPTIONS = {
  signal: true,
  timeoutMs: true,
  pollMinMs: true,
  pollMaxMs: true,
  onStatus: true,
} as const satisfies { readonly [K in keyof Required<WaitOptions>]: true };

export interface CompletedQuery {
  readonly handle: QueryHandle;
  /**
   * The last check; undefined when the create already answered `complete` (then no HEAD was made: the
   * handle has the total and formats, and the first data page's headers say whether it was truncated).
   */
  readonly status: QueryStatus | undefined;
}

export async function createAndWait(
  client: EndpointClient,
  datasetId: string,
  body: WireBody,
  options: WaitOptions = {},
  telemetry?: QueryTelemetry,
): Promise<CompletedQuery> {
  const timeoutMs = options.timeoutMs ?? 600_000;
  const { signal, dispose } = linkSignals(
    [options.signal],
    timeoutMs,
    () => new TimeoutError(`Waiting for the query on ${datasetId}`, timeoutMs, { overall: true }),
  );
  try {
    const handle = await inPhase(telemetry, 'create', () => client.postQuery(datasetId, body, { signal }));
    if (!KNOWN_QUERY_STATES.has(handle.state)) {
      throw new QueryFailedError({
        state: handle.state,
        datasetId,
        queryId: handle.id,
        serverMessage: handle.message,
      });
    }
    if (handle.state === 'complete') return { handle, status: undefined };
    const status = await inPhase(telemetry, 'wait', () =>
      waitForQuery(client, datasetId, handle.id, { ...options, signal }),
    );
    return { handle, status };
  } finally {
    dispose();
  }
}

/**
 * Polls HEAD until the query reports `complete`. Always checks at least once: the handle has no
 * `truncated`. A state the spec does not name ends the wait at once with a `QueryFailedError`: polling
 * a `failed` query until the timeout would only hide what the service said.
 */
export async function waitForQuery(
  client: EndpointClient,
  datasetId: string,
  queryId: string,
  options: WaitOptions = {},
): Promise<QueryStatus> {
  let pause = options.pollMinMs ?? 50;
  const maxPause = options.pollMaxMs ?? 2000;
  for (;;) {
    const status = await client.checkQuery(datasetId, queryId, { signal: options.signal });
    options.onStatus?.(status);
    if (status.state === 'complete') return status;
    if (!KNOWN_QUERY_STATES.has(status.state)) {
      throw new QueryFailedError({ state: status.state, datasetId, queryId });
    }
    // Jitter over the upper quarter keeps many clients from polling in lockstep without waiting much
    // longer than the step; the service's Retry-After, when it sends one, comes first.
    const step = status.retryAfterMs ?? pause * (0.75 + Math.random() * 0.25);
    await sleep(step, options.signal);
    pause = Math.min(maxPause, pause * 1.25);
  }
}
