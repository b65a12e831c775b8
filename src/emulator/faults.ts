/**
 * Fault injection: a hook the emulator calls for every request before routing, so tests can make the
 * "service" slow, failing, or cut off at an exact point, and check the client copes.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { AVAILABLE_CODINGS, type ContentCoding } from './compression.js';
import { describeValue } from './messages.js';
import { errorReply, HSTS, jsonReply, type Reply } from './reply.js';

/** What the fault hook sees of a request. */
export interface FaultContext {
  readonly method: string;
  /** Path relative to `basePath`, still percent-encoded as sent (e.g. `/datasets/job_listings/query/`). */
  readonly path: string;
  /** Decoded query parameters (the first value of each name). */
  readonly query: Readonly<Record<string, string>>;
  /** Request headers, names in lower case. */
  readonly headers: IncomingHttpHeaders;
  /** 1-based number of this request among all the emulator has received (not reset by `resetRequests`). */
  readonly requestNumber: number;
}

/**
 * A fault to inject into one request.
 * - `delay`: wait `ms`, then answer normally.
 * - `status`: answer `status` at once (e.g. 429 with `Retry-After`, 503); `body` is sent as is when a
 *   string, as JSON otherwise; default `{"message":"injected fault: <status>"}`.
 * - `reset`: destroy the connection (TCP RST) before any response byte.
 * - `cut`: send the real headers (with the full `Content-Length`) and the first `afterBytes` bytes of the
 *   real body, then destroy the connection. Clamped to body length - 1, so the body is always cut short.
 * - `trickle`: send the real response, body `bytesPerChunk` bytes every `intervalMs`.
 * - `encoding`: the real response, its body coded with `encodeWith` whatever the request accepts, and
 *   `Content-Encoding: <contentEncoding>` (default: the name of `encodeWith`; none for identity). So a test
 *   can make the service compress unasked (`{ encodeWith: 'gzip' }`), lie (`{ encodeWith: 'identity',
 *   contentEncoding: 'gzip' }`) or name a coding nobody knows (`contentEncoding: 'x-snappy'`).
 */
export type Fault =
  | { readonly kind: 'delay'; readonly ms: number }
  | {
      readonly kind: 'status';
      readonly status: number;
      readonly body?: unknown;
      readonly headers?: Readonly<Record<string, string>>;
    }
  | { readonly kind: 'reset' }
  | { readonly kind: 'cut'; readonly afterBytes: number }
  | { readonly kind: 'trickle'; readonly bytesPerChunk: number; readonly intervalMs: number }
  | {
      readonly kind: 'encoding';
      readonly encodeWith: ContentCoding | 'identity';
      readonly contentEncoding?: string;
    };

/** Called for every request before routing; return `undefined` for no fault. */
export type FaultHook = (request: FaultContext) => Fault | undefined | Promise<Fault | undefined>;

function isCount(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min;
}

/**
 * Checks what a hook returned, so a typo in a test's fault plan surfaces as a clear 500 message
 * instead of a silently normal response.
 */
export function checkFault(value: unknown): { fault: Fault | undefined } | { error: string } {
  if (value === undefined || value === null) return { fault: undefined };
  if (typeof value !== 'object')
    return { error: `Expected a fault object or undefined, got ${describeValue(value)}` };
  const f = value as Record<string, unknown>;
  switch (f.kind) {
    case 'delay':
      return isCount(f.ms, 0)
        ? { fault: { kind: 'delay', ms: f.ms } }
        : { error: `Expected delay fault \`ms\` to be an integer >= 0, got ${describeValue(f.ms)}` };
    case 'status': {
      if (!isCount(f.status, 100) || f.status > 599) {
        return {
          error: `Expected status fault \`status\` to be an integer 100-599, got ${describeValue(f.status)}`,
        };
      }
      const headers = f.headers;
      if (headers !== undefined) {
        if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) {
          return {
            error: `Expected status fault \`headers\` to be an object, got ${describeValue(headers)}`,
          };
        }
        for (const [name, v] of Object.entries(headers)) {
          if (typeof v !== 'string') {
            return {
              error: `Expected status fault header ${JSON.stringify(name)} to be a string, got ${describeValue(v)}`,
            };
          }
        }
      }
      return {
        fault: {
          kind: 'status',
          status: f.status,
          ...(f.body !== undefined ? { body: f.body } : {}),
          ...(headers !== undefined ? { headers: headers as Record<string, string> } : {}),
        },
      };
    }
    case 'reset':
      return { fault: { kind: 'reset' } };
    case 'cut':
      return isCount(f.afterBytes, 0)
        ? { fault: { kind: 'cut', afterBytes: f.afterBytes } }
        : {
            error: `Expected cut fault \`afterBytes\` to be an integer >= 0, got ${describeValue(f.afterBytes)}`,
          };
    case 'trickle':
      if (!isCount(f.bytesPerChunk, 1)) {
        return {
          error: `Expected trickle fault \`bytesPerChunk\` to be an integer >= 1, got ${describeValue(f.bytesPerChunk)}`,
        };
      }
      if (!isCount(f.intervalMs, 0)) {
        return {
          error: `Expected trickle fault \`intervalMs\` to be an integer >= 0, got ${describeValue(f.intervalMs)}`,
        };
      }
      return { fault: { kind: 'trickle', bytesPerChunk: f.bytesPerChunk, intervalMs: f.intervalMs } };
    case 'encoding': {
      const codings = [...AVAILABLE_CODINGS, 'identity'];
      if (!codings.includes(f.encodeWith as string)) {
        return {
          error: `Expected encoding fault \`encodeWith\` to be one of ${codings.join(', ')}, got ${describeValue(f.encodeWith)}`,
        };
      }
      const header = f.contentEncoding;
      if (header !== undefined && (typeof header !== 'string' || !/^[\x20-\x7e]*$/.test(header))) {
        return {
          error: `Expected encoding fault \`contentEncoding\` to be a header value (visible ASCII), got ${describeValue(header)}`,
        };
      }
      return {
        fault: {
          kind: 'encoding',
          encodeWith: f.encodeWith as ContentCoding | 'identity',
          ...(header !== undefined ? { contentEncoding: header } : {}),
        },
      };
    }
    default:
      return {
        error: `Expected fault \`kind\` to be one of delay, status, reset, cut, trickle, encoding, got ${describeValue(f.kind)}`,
      };
  }
}

/** The reply of a `status` fault: its body as text when a string, as JSON otherwise. */
export function faultReply(fault: Extract<Fault, { kind: 'status' }>): Reply {
  if (fault.body === undefined) {
    return errorReply(fault.status, `injected fault: ${fault.status}`, fault.headers ?? {});
  }
  if (typeof fault.body === 'string') {
    return {
      status: fault.status,
      headers: { ...HSTS, 'Content-Type': 'text/plain; charset=utf-8', ...fault.headers },
      body: Buffer.from(fault.body, 'utf8'),
    };
  }
  return jsonReply(fault.status, fault.body, fault.headers ?? {});
}
