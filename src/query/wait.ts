/**
 * Creating a query and waiting for it: POST, then HEAD with exponential backoff and jitter (not a fixed
 * 1 s: a fast query is seen at once, a slow one is not hammered).
 */

import { linkSignals, sleep } from '../core/abortable.js';
import { KNOWN_QUERY_STATES, QueryFailedError, TimeoutError } from '../core/errors.js';
import type { QueryBody, QueryHandle, QueryStatus } from '../core/wire.js';
import type { EndpointClient } from '../transport/endpoints.js';

export interface WaitOptions {
  readonly signal?: AbortSignal | undefined;
  /** Overall limit for creating and waiting, in ms. @default 10 minutes */
  readonly timeoutMs?: number | undefined;
  /** First pause between checks, in ms. @default 100 */
  readonly pollMinMs?: number | undefined;
  /** Longest pause between checks, in ms. @default 5000 */
  readonly pollMaxMs?: number | undefined;
  /** Called with each status seen while waiting (for progress displays). */
  readonly onStatus?: ((status: QueryStatus) => void) | undefined;
}

export interface CompletedQuery {
  readonly handle: QueryHandle;
  readonly status: QueryStatus;
}

export async function createAndWait(
  client: EndpointClient,
  datasetId: string,
  body: QueryBody,
  options: WaitOptions = {},
): Promise<CompletedQuery> {
  const timeoutMs = options.timeoutMs ?? 600_000;
  const { signal, dispose } = linkSignals(
    [options.signal],
    timeoutMs,
    () => new TimeoutError(`Waiting for the query on ${datasetId}`, timeoutMs, { overall: true }),
  );
  try {
    const handle = await client.createQuery(datasetId, body, { signal });
    if (!KNOWN_QUERY_STATES.has(handle.state)) {
      throw new QueryFailedError({
        state: handle.state,
        datasetId,
        queryId: handle.id,
        serverMessage: handle.message,
      });
    }
    const status = await waitForQuery(client, datasetId, handle.id, { ...options, signal });
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
  let pause = options.pollMinMs ?? 100;
  const maxPause = options.pollMaxMs ?? 5000;
  for (;;) {
    const status = await client.checkQuery(datasetId, queryId, { signal: options.signal });
    options.onStatus?.(status);
    if (status.state === 'complete') return status;
    if (!KNOWN_QUERY_STATES.has(status.state)) {
      throw new QueryFailedError({ state: status.state, datasetId, queryId });
    }
    // Full jitter around the current step keeps many clients from polling in lockstep.
    await sleep(pause / 2 + Math.random() * (pause / 2), options.signal);
    pause = Math.min(maxPause, pause * 1.6);
  }
}
