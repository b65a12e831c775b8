/**
 * Validation and canonical form of the query creation body, and the query id derived from it
 * (docs/wire-formats.md: sha256 of dataset id, "\n", canonical JSON).
 */
import { createHash } from 'node:crypto';
import type { WireBody } from '../core/wire.js';
import { describeValue } from './messages.js';

export const TICKER_PATTERN = /^[a-z0-9_.-]+:[a-z0-9_.&-]+$/;

/** Deeper bodies are refused rather than risk the canonicaliser's recursion. */
const MAX_DEPTH = 64;

export type BodyCheck = { ok: true; body: WireBody; tickers: string[] } | { ok: false; message: string };

/**
 * Checks a parsed body. On success `tickers` is sorted and de-duplicated (empty = no ticker filter).
 */
export function checkQueryBody(value: unknown): BodyCheck {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, message: `body must be a JSON object, got ${describeValue(value)}` };
  }
  const body = value as WireBody;
  if (depthExceeds(body, MAX_DEPTH)) {
    return { ok: false, message: `body must not nest deeper than ${MAX_DEPTH} levels` };
  }
  const raw = body.tickers;
  if (raw === undefined) return { ok: true, body, tickers: [] };
  if (!Array.isArray(raw)) {
    return { ok: false, message: `tickers must be an array of strings, got ${describeValue(raw)}` };
  }
  for (let i = 0; i < raw.length; i++) {
    const t: unknown = raw[i];
    if (typeof t !== 'string' || !TICKER_PATTERN.test(t)) {
      return {
        ok: false,
        message: `tickers[${i}] must be a ticker shaped <market>:<identifier> in lower case, got ${describeValue(t)}`,
      };
    }
  }
  return { ok: true, body, tickers: sortedUnique(raw as string[]) };
}

function depthExceeds(value: unknown, limit: number): boolean {
  // Iterative: the point is to stay off the call stack for hostile input.
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

function sortedUnique(items: readonly string[]): string[] {
  return [...new Set(items)].sort();
}

/** Object keys sorted recursively; `tickers` sorted, de-duplicated, and present (missing = []). */
export function canonicalJson(body: WireBody, tickers: readonly string[]): string {
  return stringifySorted({ ...body, tickers });
}

function stringifySorted(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stringifySorted).join(',')}]`;
  const keys = Object.keys(value).sort();
  const members: string[] = [];
  for (const key of keys) {
    const member = (value as Record<string, unknown>)[key];
    if (member === undefined) continue; // as JSON.stringify: absent and undefined are the same
    members.push(`${JSON.stringify(key)}:${stringifySorted(member)}`);
  }
  return `{${members.join(',')}}`;
}

/** The query id the service derives from a creation body: 64 lower-case hex characters. */
export function computeQueryId(datasetId: string, body: WireBody, tickers: readonly string[]): string {
  return createHash('sha256')
    .update(`${datasetId}\n${canonicalJson(body, tickers)}`)
    .digest('hex');
}
