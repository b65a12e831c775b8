/**
 * More than one `accept()` per turn of the event loop, so fresh connections are not starved under load.
 *
 * Why: since libuv 1.45 (Node 20), a listening socket accepts one connection per loop iteration
 * (libuv/libuv#3696). While a thousand kept-alive connections keep the emulator's loop busy (10-20 ms a
 * turn), a new connection completes its handshake in the kernel, then waits in the accept queue behind
 * everything that arrived before it: `npm run bench:load` measured 60-130 accepts per second, so a health
 * probe on a fresh connection waited seconds for a request the emulator answers in milliseconds.
 *
 * How: libuv accepts once per turn *per handle*, and epoll watches descriptors, not sockets. So the one
 * listening socket is watched through `width` descriptors, and each turn may accept up to `width`
 * connections. Node has no `dup()`, but passing a handle to another process duplicates its descriptor
 * (SCM_RIGHTS): a short-lived helper process is handed the listener and hands it straight back, `width - 1`
 * times; each copy that returns is a `net.Server` on its own descriptor whose connections go to the HTTP
 * server. The helper exits once done; nothing runs beside the emulator afterwards. Node 22.12's `reusePort`
 * would be the direct way, but needs several sockets bound to one port and is not in Node 20.
 */
import { spawn } from 'node:child_process';
import type { Server, Socket } from 'node:net';

/**
 * The helper, as a CommonJS script (`node -e`: no file to find from `src/` or `dist/`). Every server it is
 * given goes back, and is then closed here (the returned copy is another descriptor of the same socket, so
 * closing this one leaves it listening). Between its arrival and its return it listens in this process
 * too: a connection accepted in that moment is handed back, not dropped.
 */
const MIRROR = `
process.on('message', (message, server) => {
  if (message !== 'mirror' || !server) return;
  server.on('connection', (socket) => process.send('connection', socket));
  process.send('mirrored', server, () => server.close());
});
process.on('disconnect', () => process.exit(0));
`;

/** How long making the copies may take in all (about 0.3 ms each, and 30-50 ms to start the helper). */
const GIVE_UP_MS = 3000;

/** The widened listener: extra copies of the listening descriptor, closed with `close()`. */
export interface WideAccept {
  /** How many descriptors watch the listening socket, the original included. */
  readonly width: number;
  close(): void;
}

/**
 * Watches `listener`'s socket through `width` descriptors in all, handing every connection accepted on a
 * copy to `onConnection`. Falls back to the one descriptor (width 1) when the helper cannot run: a wide
 * accept is an optimisation under load, never a reason for the emulator not to start.
 */
export async function widenAccept(
  listener: Server,
  width: number,
  onConnection: (socket: Socket) => void,
): Promise<WideAccept> {
  const copies: Server[] = [];
  let closed = false;
  const close = () => {
    closed = true;
    for (const copy of copies.splice(0)) copy.close();
  };
  // The one-accept-per-turn limit is libuv's; Deno and Bun run their own loops (and pass no handles).
  if (width <= 1 || 'deno' in process.versions || 'bun' in process.versions) return { width: 1, close };
  let helper: ReturnType<typeof spawn> | undefined;
  try {
    // spawn, not fork: the parent's flags (a CPU profile, an inspector port) are not the helper's, and
    // neither is NODE_OPTIONS.
    const child = spawn(process.execPath, ['-e', MIRROR], {
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      env: {},
    });
    helper = child;
    // All the copies asked at once: Node passes one handle at a time each way and queues the rest, so
    // the helper returns one copy while the next is on its way to it.
    const want = width - 1;
    await new Promise<void>((resolve) => {
      let settled = false;
      const finish = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve();
      };
      // A helper that never answers (a sandbox that lets it start but not pass handles) must not hold the
      // emulator's start: after this long the copies made so far are kept.
      const timer = setTimeout(finish, GIVE_UP_MS);
      child.once('error', finish);
      child.once('exit', finish);
      child.on('message', (message: unknown, handle: unknown) => {
        if (!handle) return;
        // A connection the helper accepted while it held the listener: ours like any other.
        if (message === 'connection') {
          onConnection(handle as Socket);
          return;
        }
        if (message !== 'mirrored') return;
        const copy = handle as Server;
        // Too late (given up, or closed meanwhile): not ours to keep listening.
        if (settled || closed) {
          copy.close();
          return;
        }
        copy.on('connection', onConnection);
        // The copy was opened for us by Node and is not the HTTP server: errors on it must not go uncaught.
        copy.on('error', () => {});
        copies.push(copy);
        if (copies.length === want) finish();
      });
      for (let i = 0; i < want; i++) child.send('mirror', listener);
    });
  } catch {
    // Keep whatever copies arrived; the original descriptor alone still serves.
  } finally {
    if (helper?.connected) helper.disconnect();
    helper?.unref();
  }
  return { width: 1 + copies.length, close };
}
