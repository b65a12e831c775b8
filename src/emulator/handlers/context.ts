import type { IncomingHttpHeaders } from 'node:http';
import type { NormalizedOptions } from '../options.js';
import type { PageCache } from '../page-cache.js';
import type { QueryStore } from '../query-store.js';

/** The emulator's state, shared by every handler. */
export interface ServiceState {
  readonly options: NormalizedOptions;
  readonly queries: QueryStore;
  readonly pages: PageCache;
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
}
