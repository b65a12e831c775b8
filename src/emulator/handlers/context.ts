import type { IncomingHttpHeaders } from 'node:http';
import type { NormalizedOptions } from '../options.js';
import type { PageBuilder } from '../page-builder.js';
import type { PageCache } from '../page-cache.js';
import type { QueryStore } from '../query-store.js';

/** The emulator's state, shared by every handler. */
export interface ServiceState {
  readonly options: NormalizedOptions;
  readonly queries: QueryStore;
  readonly pages: PageCache;
  readonly builder: PageBuilder;
  /** Rows of the result pages being built or sent (`maxPageRowsInFlight`), and how many were shed. */
  readonly pagesInFlight: { rows: number; shed: number };
}

export type BodyResult =
  | { readonly ok: true; readonly body: Buffer }
  | { readonly ok: false; readonly tooLarge: true };

/** What a handler sees of a request, once routed. */
export interface RouteRequest {
  readonly method: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: IncomingHttpHeaders;
  /** Reads the body, refusing (without reading further) beyond `maxBodyBytes`. */
  readBody(): Promise<BodyResult>;
  /** Aborted when the client goes away before its answer is sent (or the emulator closes). */
  readonly signal: AbortSignal;
  /** Runs `fn` once the response is done: sent in full, or its connection gone. */
  onDone(fn: () => void): void;
}
