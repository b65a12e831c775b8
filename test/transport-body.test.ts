/**
 * transport/body.ts: the one place a response body is held to its Content-Length and the byte limit, and
 * where a text too long for V8 becomes a ResponseTooLargeError. Over real HTTP (a plain `node:http` server
 * on 127.0.0.1:0 that writes exactly the bytes and headers each case needs), except where HTTP/1.1 itself
 * cannot produce the case (a body longer than its Content-Length: undici ends it there).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { DqsError } from '../src/core/errors.js';
import { asResponseTooLarge, countBody, readBounded, readText } from '../src/transport/body.js';
import type { HttpResponse } from '../src/transport/exchange.js';
import { HttpTransport } from '../src/transport/http.js';
import { normalizeClientOptions } from '../src/transport/options.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

/** A server answering every request with `answer`, and a transport pointed at it (no retries). */
async function serve(answer: (res: ServerResponse) => void): Promise<HttpTransport> {
  const server = createServer((_req, res) => answer(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const http = new HttpTransport(
    normalizeClientOptions({
      baseUrl: `http://127.0.0.1:${port}/`,
      apiKey: 'k',
      retry: false,
      timeoutMs: 2000,
    }),
  );
  closers.push(
    () => new Promise<void>((resolve) => server.close(() => resolve())),
    () => http.close(),
  );
  server.on('connection', (socket) => closers.push(async () => void socket.destroy()));
  return http;
}

function send(http: HttpTransport): Promise<HttpResponse> {
  return http.send({ method: 'GET', segments: ['body'], accept: '*/*', retry: false });
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    return err instanceof DqsError ? err.code : `not a DqsError: ${String(err)}`;
  }
  return 'no error';
}

/** A response whose body is `chunks` as they come, for the cases HTTP/1.1 framing cannot produce. */
function synthetic(chunks: Buffer[], contentLength: number): HttpResponse {
  const signal = new AbortController().signal;
  return {
    status: 200,
    headers: { 'content-length': String(contentLength) },
    body: Readable.from(chunks),
    codings: [],
    wireBytes: (n) => n,
    measured: () => {},
    info: { method: 'GET', url: 'http://127.0.0.1/body' },
    done: () => {},
    streaming: () => {},
    signal,
  };
}

describe('bounded body reading', () => {
  it('a plain body declared over the limit fails before any byte is read (no wait for the body)', async () => {
    // Headers only: the body never comes. Without the Content-Length check, the read would wait for it
    // until the request's timeout (DQS_TIMEOUT).
    const http = await serve((res) => {
      res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) });
      res.flushHeaders();
    });
    const response = await send(http);
    expect(await codeOf(readBounded(response, 1024 * 1024))).toBe('DQS_RESPONSE_TOO_LARGE');
    response.done();
  });

  it('an undeclared (chunked) body fails as soon as it passes the limit', async () => {
    const http = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.write(Buffer.alloc(64 * 1024));
      res.write(Buffer.alloc(64 * 1024));
      // Never ended: only the limit can end this read.
    });
    const response = await send(http);
    expect(await codeOf(readText(response, 100 * 1024))).toBe('DQS_RESPONSE_TOO_LARGE');
    response.done();
  });

  it.each([
    ['declared, bytes', true, false],
    ['declared, text', true, true],
    ['chunked, bytes', false, false],
    ['chunked, text', false, true],
  ])('a 3 MB body (%s) comes back whole and unchanged', async (_name, declared, text) => {
    // Past 1 MiB the readers copy into one buffer as the chunks come (a sink): every path checked.
    const body = Buffer.from(randomBytes(1536 * 1024).toString('hex'));
    const http = await serve((res) => {
      res.writeHead(200, declared ? { 'content-length': String(body.length) } : {});
      for (let at = 0; at < body.length; at += 100_000) res.write(body.subarray(at, at + 100_000));
      res.end();
    });
    const response = await send(http);
    try {
      if (text) expect(await readText(response, body.length)).toBe(body.toString('utf8'));
      else expect((await readBounded(response, body.length)).equals(body)).toBe(true);
    } finally {
      response.done();
    }
  });

  it('a body longer than its Content-Length is a ProtocolError (a dispatcher that does not end it there)', async () => {
    const response = synthetic([Buffer.alloc(10), Buffer.alloc(10)], 15);
    expect(await codeOf(readBounded(response, 1024))).toBe('DQS_PROTOCOL');
  });

  it('a body shorter than its Content-Length is a NetworkError (a cut, retried like a reset)', async () => {
    const response = synthetic([Buffer.alloc(10)], 15);
    expect(await codeOf(readBounded(response, 1024))).toBe('DQS_NETWORK');
  });

  it('countBody: the same rules for a reader of its own (the page reader)', () => {
    const count = countBody(synthetic([], 15), 1024);
    expect(count.declared).toBe(15);
    expect(count.add(10)).toBe(10);
    expect(() => count.end()).toThrow(/ended after 10 of its 15 declared bytes/);
    expect(() => count.add(6)).toThrow(/longer than its Content-Length of 15 bytes/);
    expect(() => countBody(synthetic([], 2048), 1024)).toThrow(DqsError);
  });
});

describe('a text too long for a string', () => {
  it('ERR_STRING_TOO_LONG becomes a ResponseTooLargeError with the cause; any other error is kept', () => {
    const info = { method: 'GET', url: 'http://127.0.0.1/body' };
    const tooLong = Object.assign(new Error('Cannot create a string longer than 0x1fffffe8 characters'), {
      code: 'ERR_STRING_TOO_LONG',
    });
    const mapped = asResponseTooLarge(tooLong, info, 4096) as DqsError;
    expect(mapped.code).toBe('DQS_RESPONSE_TOO_LARGE');
    expect(mapped.cause).toBe(tooLong);
    const other = new TypeError('not this one');
    expect(asResponseTooLarge(other, info, 4096)).toBe(other);
  });
});
