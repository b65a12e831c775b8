/**
 * The emulator's HTTP server: request log, fault hook, routing, transmission. No input may crash it:
 * every request runs inside one try/catch and malformed HTTP is answered by `clientError`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeReply } from './encode.js';
import { checkFault, type Fault, faultReply } from './faults.js';
import type { RouteRequest, ServiceState } from './handlers/context.js';
import { IdleCollector } from './idle-collector.js';
import { capText, quote } from './messages.js';
import { type EmulatorOptions, type NormalizedOptions, normalizeOptions } from './options.js';
import { BuildCancelled, PageBuilder } from './page-builder.js';
import { PageCache } from './page-cache.js';
import { QueryStore } from './query-store.js';
import { readBody } from './read-body.js';
import { errorReply, type Reply } from './reply.js';
import { route } from './routes.js';
import { MinuteWindow, Pacer } from './shaping.js';
import { parseTarget } from './target.js';
import { transmit } from './transmit.js';
import { type WideAccept, widenAccept } from './wide-accept.js';

/** One request as the emulator saw it. */
export interface RequestRecord {
  /** 1-based number among all requests received (keeps counting across `resetRequests`). */
  readonly n: number;
  readonly method: string;
  /** Path relative to `basePath` as sent (percent-encoded); the full path when outside `basePath`. */
  readonly path: string;
  /** Decoded query parameters, first value of each name (`{}` when malformed). */
  readonly query: Readonly<Record<string, string>>;
  /** The `Accept` header, or null when absent. */
  readonly accept: string | null;
  /** The `Accept-Encoding` header, or null when absent. */
  readonly acceptEncoding: string | null;
  /** `Content-Encoding` answered (e.g. `gzip`), null for none; set with `status`. */
  encoding: string | null;
  /** Status answered; null until the headers go out (and for ever when the fault was `reset`). */
  status: number | null;
  /** When the request arrived, ms since the epoch. */
  readonly at: number;
}

/** What the emulator is doing now: for tests of load shedding and for the load benchmark. */
export interface EmulatorStats {
  /** Requests being answered. */
  readonly requestsInFlight: number;
  /** Rows of the result pages being built or sent (bounded by `maxPageRowsInFlight`). */
  readonly pageRowsInFlight: number;
  /** Pages being built, and their rows still to build. */
  readonly pagesBuilding: number;
  readonly rowsQueued: number;
  /** Page requests answered 503 by load shedding so far. */
  readonly shed: number;
  /** Serialized and compressed bodies in the page cache, and their bytes. */
  readonly cachedPages: number;
  readonly cachedBytes: number;
  /** Full garbage collections run once idle after a load, so memory returns near the idle level. */
  readonly idleCollections: number;
  /** Descriptors watching the listening socket: connections it may accept per event-loop turn. */
  readonly acceptWidth: number;
}

/** A running emulator. */
export interface Emulator {
  /** Base URL including `basePath`, no trailing slash, e.g. `http://127.0.0.1:41234/api`. */
  readonly url: string;
  readonly apiKey: string;
  readonly port: number;
  readonly host: string;
  /**
   * Requests received, in arrival order (the last `requestLogLimit` of them); appended on arrival,
   * `status` filled when answered.
   */
  readonly requests: readonly RequestRecord[];
  /** Empties `requests` (the same array). */
  resetRequests(): void;
  /** A snapshot of its load. */
  stats(): EmulatorStats;
  /** Stops listening, closes every connection (keep-alive ones too), cancels delays; idempotent. */
  close(): Promise<void>;
}

function urlHost(host: string): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return reachable.includes(':') ? `[${reachable}]` : reachable;
}

class EmulatorServer implements Emulator {
  readonly #options: NormalizedOptions;
  readonly #state: ServiceState;
  readonly #server: Server;
  readonly #requests: RequestRecord[] = [];
  #received = 0;
  #closed: Promise<void> | undefined;
  #port = 0;
  /** Extra descriptors of the listening socket (`acceptWidth`), closed with the server. */
  #wide: WideAccept | undefined;
  /** A full collection once idle after a load, so dead page Buffers do not stay resident. */
  readonly #idle = new IdleCollector(() => this.#active > 0);
  /** Requests admitted and not yet answered in full (`maxInFlight`). */
  #inFlight = 0;
  /** Requests being handled, admitted or not. */
  #active = 0;
  /** Their abort controllers, which `close()` aborts (cheaper per request than `AbortSignal.any`). */
  readonly #answering = new Set<AbortController>();
  readonly #minute: MinuteWindow | undefined;
  readonly #totalPacer: Pacer | undefined;
  /** Per connection: its pacer, and whether its first response (which pays the handshake) is still due. */
  readonly #connections = new WeakMap<Socket, { pacer: Pacer | undefined; fresh: boolean }>();

  constructor(options: NormalizedOptions) {
    this.#options = options;
    this.#state = {
      options,
      queries: new QueryStore(options.queryDelayMs),
      pages: new PageCache(options.pageCacheSize, options.pageCacheBytes, options.pageCacheIdleMs, (bytes) =>
        this.#idle.garbage(bytes),
      ),
      builder: new PageBuilder(),
      pagesInFlight: { rows: 0, shed: 0 },
    };
    const serverOptions = {
      headersTimeout: options.headersTimeoutMs,
      requestTimeout: Math.max(options.requestTimeoutMs, options.headersTimeoutMs),
      // How often Node looks for late requests: a quarter of the shorter timeout, so a 408 comes on time.
      connectionsCheckingInterval: Math.max(
        50,
        Math.min(options.headersTimeoutMs, options.requestTimeoutMs) / 4,
      ),
    };
    this.#server = options.tls
      ? createHttpsServer({ ...serverOptions, cert: options.tls.cert, key: options.tls.key })
      : createServer(serverOptions);
    this.#minute = options.requestsPerMinute > 0 ? new MinuteWindow(options.requestsPerMinute) : undefined;
    this.#totalPacer = options.totalBytesPerSecond > 0 ? new Pacer(options.totalBytesPerSecond) : undefined;
    this.#server.on('connection', (socket: Socket) => {
      const rate = options.connectionBytesPerSecond;
      this.#connections.set(socket, { pacer: rate > 0 ? new Pacer(rate) : undefined, fresh: true });
    });
    this.#server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      this.#handle(req, res).catch(() => res.destroy());
    });
    this.#server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      if (!socket.writable || err.code === 'ECONNRESET') {
        socket.destroy();
        return;
      }
      const [status, reason, message] =
        err.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'Request Header Fields Too Large', 'request headers too large']
          : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
            ? [408, 'Request Timeout', 'request not received in time (headers or body too slow)']
            : [400, 'Bad Request', 'malformed HTTP request'];
      const body = JSON.stringify({ message });
      socket.end(
        `HTTP/1.1 ${status} ${reason}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
  }

  get url(): string {
    return `${this.#options.tls ? 'https' : 'http'}://${urlHost(this.#options.host)}:${this.#port}${this.#options.basePath}`;
  }

  get apiKey(): string {
    return this.#options.apiKey;
  }

  get port(): number {
    return this.#port;
  }

  get host(): string {
    return this.#options.host;
  }

  get requests(): readonly RequestRecord[] {
    return this.#requests;
  }

  resetRequests(): void {
    this.#requests.length = 0;
  }

  stats(): EmulatorStats {
    const { builder, pages, pagesInFlight } = this.#state;
    return {
      requestsInFlight: this.#active,
      pageRowsInFlight: pagesInFlight.rows,
      pagesBuilding: builder.size,
      rowsQueued: builder.queuedRows,
      shed: pagesInFlight.shed,
      cachedPages: pages.size,
      cachedBytes: pages.bytes,
      idleCollections: this.#idle.collections,
      acceptWidth: this.#wide?.width ?? 1,
    };
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      // The kernel's queue of connections waiting to be accepted: as deep as Linux allows by default
      // (net.core.somaxconn, 4096; it caps a larger value), not Node's 511. A burst of clients (a CI job's
      // thousand connections) past the queue has its handshakes dropped and retried a second later, and a
      // fresh connection behind them waits that second too.
      this.#server.listen({ port: this.#options.port, host: this.#options.host, backlog: 4096 }, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    this.#port = (this.#server.address() as AddressInfo).port;
    // Connections accepted on a copy are the HTTP server's like any other (its 'connection' listener
    // parses them, tracks them for timeouts and closeAllConnections, and ours gives them a pacer).
    this.#wide = await widenAccept(this.#server, this.#options.acceptWidth, (socket) => {
      if (this.#closed) socket.destroy();
      else this.#server.emit('connection', socket);
    });
  }

  close(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      for (const request of this.#answering) request.abort();
      this.#wide?.close();
      this.#idle.close();
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
    return this.#closed;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.on('error', () => {}); // writes after a client hang-up must not become uncaught errors
    const { options } = this.#state;
    const method = req.method ?? '';
    const target = parseTarget(req.url ?? '/', options.basePath);
    const record: RequestRecord = {
      n: ++this.#received,
      method,
      path: target.path,
      query: target.query ?? {},
      accept: req.headers.accept ?? null,
      acceptEncoding: req.headers['accept-encoding'] ?? null,
      encoding: null,
      status: null,
      at: Date.now(),
    };
    this.#requests.push(record);
    if (this.#requests.length > options.requestLogLimit) {
      this.#requests.splice(0, this.#requests.length - options.requestLogLimit);
    }
    // Aborted when the client goes away before its answer is complete, or the emulator closes: waits end
    // and page builds nobody else waits for stop.
    const gone = new AbortController();
    const signal = gone.signal;
    this.#active++;
    this.#answering.add(gone);
    res.once('close', () => {
      if (--this.#active === 0) this.#idle.quiet();
      this.#answering.delete(gone);
      if (!res.writableFinished) gone.abort();
    });
    const arrived = performance.now();
    const connection = this.#connections.get(req.socket);
    // The WAN: one round trip before the first byte, and one more for the handshake of a new connection.
    let firstByteAt = arrived + options.latencyMs;
    if (connection?.fresh) {
      connection.fresh = false;
      firstByteAt += options.latencyMs;
    }

    try {
      let reply: Reply | undefined = this.#admit(res);
      let fault: Fault | undefined;
      if (reply === undefined && options.fault) {
        try {
          const checked = checkFault(
            await options.fault({
              method,
              path: target.path,
              query: record.query,
              headers: req.headers,
              requestNumber: record.n,
            }),
          );
          if ('error' in checked)
            reply = errorReply(500, `fault hook returned an invalid fault: ${checked.error}`);
          else fault = checked.fault;
        } catch (err) {
          reply = errorReply(
            500,
            `fault hook threw: ${capText(err instanceof Error ? err.message : String(err))}`,
          );
        }
      }
      if (fault?.kind === 'delay') await sleep(fault.ms, undefined, { signal });
      if (fault?.kind === 'reset') {
        req.socket.resetAndDestroy();
        return;
      }
      if (fault?.kind === 'status') reply = faultReply(fault);
      reply ??= await this.#route(req, res, target, signal);
      if (reply.rows !== undefined) firstByteAt += options.pageTimeMs + options.rowTimeMs * reply.rows;
      reply = await encodeReply(
        reply,
        req.headers['accept-encoding'],
        options.compression,
        this.#state.pages,
        fault,
      );
      if (signal.aborted) throw signal.reason;
      if (reply.body) this.#idle.garbage(reply.body.length);
      record.encoding = reply.headers['Content-Encoding'] ?? null;
      const wait = firstByteAt - performance.now();
      if (wait >= 1) await sleep(wait, undefined, { signal });
      record.status = reply.status;
      await transmit(res, reply, fault, signal, { connection: connection?.pacer, total: this.#totalPacer });
    } catch (err) {
      // Nobody left to answer (closing, hung up), or too late for a status: just drop the connection.
      if (
        signal.aborted ||
        err instanceof BuildCancelled ||
        res.headersSent ||
        res.destroyed ||
        req.socket.destroyed
      ) {
        res.destroy();
        return;
      }
      const message = `internal emulator error: ${capText(err instanceof Error ? err.message : String(err))}`;
      record.status = 500;
      await transmit(res, errorReply(500, message), undefined, signal);
    }
  }

  /**
   * Admission, as a gateway in front of the service: `undefined` admits the request (holding an in-flight
   * slot until its response is done), otherwise the 429 to answer.
   */
  #admit(res: ServerResponse): Reply | undefined {
    const { maxInFlight } = this.#options;
    if (maxInFlight > 0 && this.#inFlight >= maxInFlight) {
      return errorReply(429, `too many requests in flight: at most ${maxInFlight} at once`, {
        'Retry-After': '1',
      });
    }
    if (this.#minute) {
      const retryAfter = this.#minute.admit(performance.now());
      if (retryAfter > 0) {
        return errorReply(429, `rate limit: at most ${this.#options.requestsPerMinute} requests per minute`, {
          'Retry-After': String(retryAfter),
        });
      }
    }
    if (maxInFlight > 0) {
      this.#inFlight++;
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        this.#inFlight--;
      };
      // 'finish': the last byte is with the kernel, before the client can send its next request.
      res.once('finish', release);
      res.once('close', release);
    }
    return undefined;
  }

  #route(
    req: IncomingMessage,
    res: ServerResponse,
    target: ReturnType<typeof parseTarget>,
    signal: AbortSignal,
  ): Promise<Reply> | Reply {
    const { options } = this.#state;
    if (target.segments === undefined || target.query === undefined) {
      return errorReply(400, 'malformed request target: bad percent-encoding or not an absolute path');
    }
    if (!target.insideBase) {
      return errorReply(
        404,
        `no endpoint at ${quote(target.path)}; this emulator serves under ${options.basePath}/`,
      );
    }
    const routeRequest: RouteRequest = {
      method: req.method ?? '',
      query: target.query,
      headers: req.headers,
      readBody: () => readBody(req, options.maxBodyBytes),
      signal,
      onDone: (fn) => {
        res.once('close', fn);
      },
    };
    return route(target.segments, routeRequest, this.#state);
  }
}

/**
 * Starts a local, spec-faithful Dataset Query Service with deterministic synthetic data.
 *
 * @example
 * const emu = await startEmulator({ apiKey: 'demo' });
 * const res = await fetch(`${emu.url}/datasets/`, { headers: { Authorization: `token ${emu.apiKey}` } });
 * await emu.close();
 */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const server = new EmulatorServer(normalizeOptions(options));
  await server.listen();
  return server;
}
