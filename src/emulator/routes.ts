/**
 * Routing: path shape → endpoint, then authentication, API version and method checks, then the handler.
 * Dataset existence and query ids are checked by handlers, after authentication.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { API_VERSION } from '../core/wire.js';
import { datasetById } from './datasets/index.js';
import type { RouteRequest, ServiceState } from './handlers/context.js';
import { datasetMetadata, listDatasets, searchTickers } from './handlers/datasets.js';
import { checkQuery, createQuery, findQuery, readResults } from './handlers/queries.js';
import { quote } from './messages.js';
import { errorReply, type Reply } from './reply.js';

type Endpoint =
  | { readonly kind: 'list' }
  | { readonly kind: 'metadata'; readonly datasetId: string }
  | { readonly kind: 'tickers'; readonly datasetId: string }
  | { readonly kind: 'create'; readonly datasetId: string }
  | { readonly kind: 'query'; readonly datasetId: string; readonly queryId: string };

const ALLOWED: Record<Endpoint['kind'], readonly string[]> = {
  list: ['GET', 'HEAD'],
  metadata: ['GET', 'HEAD'],
  tickers: ['GET', 'HEAD'],
  create: ['POST'],
  query: ['GET', 'HEAD'],
};

/** Matches decoded segments; one trailing slash is optional everywhere. */
export function matchEndpoint(segments: readonly string[]): Endpoint | undefined {
  const s = segments.length > 1 && segments.at(-1) === '' ? segments.slice(0, -1) : segments;
  if (s[0] !== 'datasets') return undefined;
  const [, datasetId, sub, queryId] = s;
  if (s.length === 1) return { kind: 'list' };
  if (datasetId === undefined || datasetId === '') return undefined;
  if (s.length === 2) return { kind: 'metadata', datasetId };
  if (s.length === 3 && sub === 'tickers') return { kind: 'tickers', datasetId };
  if (s.length === 3 && sub === 'query') return { kind: 'create', datasetId };
  if (s.length === 4 && sub === 'query' && queryId !== undefined)
    return { kind: 'query', datasetId, queryId };
  return undefined;
}

const DATASET_ID = /^[a-z0-9_]{1,64}$/;

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** 401 reply, or undefined when authenticated. Never echoes the key. */
function checkAuth(endpoint: Endpoint, authorization: string | undefined, apiKey: string): Reply | undefined {
  if (authorization === undefined) {
    // The spec's ticker search sample sends no Authorization: accepted without one.
    if (endpoint.kind === 'tickers') return undefined;
    return errorReply(401, 'missing Authorization header; send "Authorization: token <API key>"');
  }
  const m = /^(\S+)\s+(\S+)\s*$/.exec(authorization);
  if (!m || m[1]!.toLowerCase() !== 'token') {
    return errorReply(401, 'Authorization must use the token scheme: "Authorization: token <API key>"');
  }
  // Equal-length digests: the comparison time says nothing about the key.
  if (!timingSafeEqual(digest(m[2]!), digest(apiKey))) return errorReply(401, 'invalid API key');
  return undefined;
}

export async function route(
  segments: readonly string[],
  req: RouteRequest,
  state: ServiceState,
): Promise<Reply> {
  const endpoint = matchEndpoint(segments);
  if (!endpoint) return errorReply(404, `no endpoint at ${quote(`/${segments.join('/')}`)}`);

  const denied = checkAuth(endpoint, req.headers.authorization, state.options.apiKey);
  if (denied) return denied;
  const version = req.headers['x-api-version'];
  if (version !== undefined && version !== API_VERSION) {
    return errorReply(400, `unsupported X-API-Version ${quote(String(version))}; supported: ${API_VERSION}`);
  }
  const allowed = ALLOWED[endpoint.kind];
  if (!allowed.includes(req.method)) {
    return errorReply(405, `method ${quote(req.method)} not allowed here; allowed: ${allowed.join(', ')}`, {
      Allow: allowed.join(', '),
    });
  }
  if (endpoint.kind === 'list') return listDatasets(req);

  const dataset = DATASET_ID.test(endpoint.datasetId) ? datasetById(endpoint.datasetId) : undefined;
  if (!dataset) return errorReply(404, `unknown dataset ${quote(endpoint.datasetId)}`);
  switch (endpoint.kind) {
    case 'metadata':
      return datasetMetadata(dataset, state);
    case 'tickers':
      return searchTickers(dataset, req);
    case 'create':
      return createQuery(dataset, req, state);
    case 'query': {
      const query = findQuery(dataset, endpoint.queryId, state);
      if ('status' in query) return query;
      return req.method === 'HEAD' ? checkQuery(query, state) : readResults(query, req, state);
    }
  }
}
