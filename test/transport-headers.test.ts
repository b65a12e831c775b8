/**
 * transport/headers.ts: one rule for a header sent more than once. A list (X-Formats) and the headers a
 * result's rows rest on (X-State, X-Total, X-Truncated) are joined, so a repeated X-Total reads as the
 * malformed value it is; an advisory single value (Retry-After, Location, Content-Type) is its first copy.
 * Over real HTTP: a `node:http` server on 127.0.0.1:0 that repeats header lines as each case needs.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DqsError } from '../src/core/errors.js';
import { EndpointClient } from '../src/transport/endpoints.js';
import { firstHeader, formatsHeader, joinedHeader, truncatedHeader } from '../src/transport/headers.js';

const QUERY_ID = 'a'.repeat(64);
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

/** A service whose HEAD answers `headers` (an array value is sent as that many header lines). */
async function serviceAnswering(headers: Record<string, string | string[]>): Promise<EndpointClient> {
  const server = createServer((_req, res) => {
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    res.writeHead(200).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = new EndpointClient({ baseUrl: `http://127.0.0.1:${port}/`, apiKey: 'k', retry: false });
  closers.push(
    () => new Promise<void>((resolve) => server.close(() => resolve())),
    () => client.close(),
  );
  return client;
}

describe('repeated headers over HTTP (HEAD of a query)', () => {
  it('X-Formats sent on two lines is one list; X-Truncated read; Retry-After its first copy', async () => {
    const client = await serviceAnswering({
      'x-state': 'running',
      'x-total': '0',
      'x-formats': ['text/csv, application/vnd.service.table+json', ' application/vnd.ms-excel '],
      'x-truncated': 'TRUE ',
      'retry-after': ['3', '7'],
    });
    const status = await client.checkQuery('job_listings', QUERY_ID);
    expect(status.formats).toEqual([
      'text/csv',
      'application/vnd.service.table+json',
      'application/vnd.ms-excel',
    ]);
    expect(status.truncated).toBe(true);
    expect(status.retryAfterMs).toBe(3000);
  });

  it('X-Total sent twice with two counts is a ProtocolError, never one copy picked', async () => {
    const client = await serviceAnswering({ 'x-state': 'complete', 'x-total': ['25', '30'] });
    const err = await client.checkQuery('job_listings', QUERY_ID).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DqsError);
    expect((err as DqsError).code).toBe('DQS_PROTOCOL');
    expect((err as DqsError).message).toMatch(/X-Total/);
  });
});

describe('the helpers', () => {
  const headers = { a: ['1', '2'], b: 'x', 'x-formats': ' , text/csv,,', 'x-truncated': 'false' };

  it('joinedHeader joins repeated lines with a comma; firstHeader takes the first; both pass one line', () => {
    expect(joinedHeader(headers, 'a')).toBe('1,2');
    expect(firstHeader(headers, 'a')).toBe('1');
    expect(joinedHeader(headers, 'b')).toBe('x');
    expect(firstHeader(headers, 'b')).toBe('x');
    expect(firstHeader(headers, 'missing')).toBeUndefined();
  });

  it('formatsHeader drops empty entries; truncatedHeader is undefined without the header', () => {
    expect(formatsHeader(headers)).toEqual(['text/csv']);
    expect(formatsHeader({})).toEqual([]);
    expect(truncatedHeader(headers)).toBe(false);
    expect(truncatedHeader({})).toBeUndefined();
  });
});
