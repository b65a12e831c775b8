/** Sockets for connection-fault tests: a port that never answers a connect. Closed after each test. */
import { type ChildProcess, spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterEach } from 'vitest';

const holes: { child: ChildProcess; fillers: Socket[] }[] = [];
afterEach(() => {
  for (const { child, fillers } of holes.splice(0)) {
    for (const s of fillers) s.destroy();
    child.kill();
  }
});

/**
 * A port on 127.0.0.1 that takes no connection and refuses none, as a host behind a firewall that drops
 * packets: a listener in a child process that never accepts (its event loop is blocked), whose accept
 * queue two connections fill. The kernel then drops every further SYN, so a connect waits until it
 * times out.
 */
export async function blackHole(): Promise<number> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('node:net').createServer();
       s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () =>
         process.stdout.write(s.address().port + '\\n', () =>
           Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)));`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const hole = { child, fillers: [] as Socket[] };
  holes.push(hole);
  const port = await new Promise<number>((resolve) =>
    child.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim()))),
  );
  // backlog 1: the kernel queues two connections, then drops SYNs.
  hole.fillers = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')];
  await Promise.all(hole.fillers.map((s) => new Promise((r) => s.once('connect', r))));
  return port;
}
