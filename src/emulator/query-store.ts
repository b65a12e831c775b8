import { performance } from 'node:perf_hooks';
import type { QueryState } from '../core/wire.js';
import type { DatasetDefinition } from './datasets/index.js';
import type { ResultPlan } from './rows.js';

export interface StoredQuery {
  readonly id: string;
  readonly dataset: DatasetDefinition;
  readonly plan: ResultPlan;
  /** Wall-clock creation time (ms since the epoch). */
  readonly createdAt: number;
  /** `performance.now()` from which the query is complete: immune to wall-clock jumps. */
  readonly readyAt: number;
}

/**
 * Queries by id, in memory. Re-posting a body finds the existing query (same id), so its running period
 * is not restarted. Bounded, oldest first out, so a long-lived emulator fed random bodies stays small.
 */
export class QueryStore {
  readonly #queries = new Map<string, StoredQuery>();
  readonly #delayMs: number;
  readonly #maxQueries: number;

  constructor(delayMs: number, maxQueries = 100_000) {
    this.#delayMs = delayMs;
    this.#maxQueries = maxQueries;
  }

  get(id: string): StoredQuery | undefined {
    return this.#queries.get(id);
  }

  getOrCreate(id: string, create: () => Pick<StoredQuery, 'dataset' | 'plan'>): StoredQuery {
    const existing = this.#queries.get(id);
    if (existing) return existing;
    const query: StoredQuery = {
      id,
      ...create(),
      createdAt: Date.now(),
      readyAt: performance.now() + this.#delayMs,
    };
    this.#queries.set(id, query);
    if (this.#queries.size > this.#maxQueries) {
      const oldest = this.#queries.keys().next().value;
      if (oldest !== undefined) this.#queries.delete(oldest);
    }
    return query;
  }

  stateOf(query: StoredQuery): QueryState {
    return performance.now() >= query.readyAt ? 'complete' : 'running';
  }
}
