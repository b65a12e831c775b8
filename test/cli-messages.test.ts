/**
 * Messages that told something untrue, each with its new wording: an unknown dataset warned about the
 * ticker first; every ENOENT was "the directory does not exist"; a wrong path in the base URL advised
 * running `dqs datasets` to the user running it; a hung server's error named one try's 60 s after 120 s
 * and a `--page-size` that `dqs datasets` lacks; a malformed ticker read differently per command, after
 * the embedded emulator had started; `-o=y.csv` wrote a file named `=y.csv`.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../src/cli/exit-codes.js';
import { type Emulator, startEmulator } from '../src/emulator/index.js';
import { ensureBuilt, finishCli, startCli } from './cli-helpers.js';

const KEY = 'messages-key-2e6c';

let work: string;
let emulator: Emulator;

beforeAll(async () => {
  ensureBuilt();
  work = await mkdtemp(join(tmpdir(), 'dqs-messages-'));
  emulator = await startEmulator({ apiKey: KEY });
}, 120_000);

afterAll(async () => {
  await emulator?.close();
  await rm(work, { recursive: true, force: true });
});

function conn(url = emulator.url): string[] {
  return ['--base-url', url, '--api-key', KEY];
}

function dqs(args: readonly string[]) {
  return finishCli(startCli(args, { cwd: work }));
}

/** The lines on stderr (all of them: an embedded emulator's notice counts too). */
function errorLines(stderr: string): string[] {
  return stderr.trim().split('\n');
}

describe('true messages', () => {
  it('an unknown dataset with a ticker: the 404, and no warning about the ticker', async () => {
    const r = await dqs(['query', 'no_such_dataset', '--ticker', 'nasdaq:aapl', '--out', 'x.csv', ...conn()]);
    expect(r.code, r.stderr).toBe(ExitCode.notFound);
    expect(errorLines(r.stderr)).toEqual([
      expect.stringMatching(/^dqs query: 404 from the service .*unknown dataset "no_such_dataset"/),
    ]);
    expect(r.stderr).not.toMatch(/has no data/);
  });

  it('ENOENT names what is missing: the --tickers-file itself, or the directory of --out', async () => {
    const file = await dqs([
      'query',
      'job_listings',
      '--tickers-file',
      'nofile.txt',
      '--out',
      'x.csv',
      ...conn(),
    ]);
    expect(file.code, file.stderr).toBe(ExitCode.local);
    expect(file.stderr).toMatch(
      /cannot read --tickers-file nofile\.txt: nofile\.txt does not exist \(ENOENT\)\.$/m,
    );
    const dir = join(work, 'no', 'such');
    const out = await dqs(['query', 'job_listings', '--out', join(dir, 'x.csv'), ...conn()]);
    expect(out.code, out.stderr).toBe(ExitCode.local);
    expect(out.stderr).toContain(`the directory ${join(work, 'no')} does not exist (ENOENT)`);
  });

  it('a wrong path in the base URL: advice about --base-url, not "`dqs datasets` lists them"', async () => {
    const r = await dqs(['datasets', ...conn(`${emulator.url}/v2`)]);
    expect(r.code, r.stderr).toBe(ExitCode.notFound);
    expect(r.stderr).toMatch(/404 from the service \(GET .*\/v2\/datasets\/\)/);
    expect(r.stderr).toMatch(/check the path in --base-url or DQS_BASE_URL/);
    expect(r.stderr).not.toMatch(/dqs datasets` lists/);
  });

  it('a server that accepts and never answers: the whole wait, the tries, and --timeout; no --page-size for datasets', async () => {
    const sockets = new Set<Socket>();
    const server: Server = createServer((s) => {
      sockets.add(s);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const r = await dqs(['datasets', ...conn(url), '--timeout', '1']);
      expect(r.code, r.stderr).toBe(ExitCode.service);
      expect(errorLines(r.stderr)).toHaveLength(1);
      const m =
        /no answer from the service \(GET .*\/datasets\/\): waited ([\d.]+) s in all, (\d+) tries of 1 s each\. .*a longer --timeout SECONDS\.$/.exec(
          r.stderr.trim(),
        );
      expect(m, r.stderr).not.toBeNull();
      const [waited, tries] = [Number(m![1]), Number(m![2])];
      expect(tries).toBeGreaterThan(1);
      expect(waited).toBeGreaterThanOrEqual(tries * 1);
      expect(r.stderr).not.toMatch(/page-size/);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 60_000);

  it('a malformed ticker: one wording in query, export and datasets, before the emulator starts', async () => {
    const runs = await Promise.all([
      dqs(['query', 'job_listings', '--ticker', 'NASDAQ:AAPL', '--out', 'x.csv']),
      dqs(['export', 'job_listings', '--ticker', 'NASDAQ:AAPL', '--out-dir', 'lake']),
      dqs(['datasets', '--ticker', 'NASDAQ:AAPL']),
    ]);
    for (const [i, command] of ['query', 'export', 'datasets'].entries()) {
      const r = runs[i]!;
      expect(r.code, r.stderr).toBe(ExitCode.usage);
      // One line: no "using the embedded emulator" notice before it.
      expect(errorLines(r.stderr)).toEqual([
        `dqs ${command}: "NASDAQ:AAPL" is not a ticker: expected \`<market>:<identifier>\` such as \`nasdaq:aapl\` (tickers are lower case). See \`dqs ${command} --help\`.`,
      ]);
    }
    expect(existsSync(join(work, 'lake'))).toBe(false);
  });

  it.each([
    [['dataset', '../../etc/passwd'], /Invalid `datasetId`/],
    [['tickers', '../x', 'apple'], /Invalid `datasetId`/],
    [['status', 'job_listings', 'not-hex'], /Invalid `queryId`/],
    [['query', 'a b', '--out', 'x.csv'], /Invalid `datasetId`/],
  ])('malformed ids of %j fail before the embedded emulator starts', async (args, message) => {
    const r = await dqs(args);
    expect(r.code, r.stderr).toBe(ExitCode.usage);
    expect(errorLines(r.stderr)).toEqual([expect.stringMatching(message)]);
  });

  it('-o=FILE and --out=FILE both mean FILE', async () => {
    const dir = await mkdtemp(join(work, 'eq-'));
    const short = await finishCli(
      startCli(['query', 'store_locations', '--ticker', 'nasdaq:aapl', '-o=y.csv', ...conn()], { cwd: dir }),
    );
    expect(short.code, short.stderr).toBe(0);
    const long = await finishCli(
      startCli(['query', 'store_locations', '--ticker', 'nasdaq:aapl', '--out=z.csv', ...conn()], {
        cwd: dir,
      }),
    );
    expect(long.code, long.stderr).toBe(0);
    expect((await readdir(dir)).sort()).toEqual(['y.csv', 'z.csv']);
  });
});

describe('advice names what a dqs user types: flags and variables, not library options', () => {
  // Issue #47: lines said `baseUrl`, `apiKey`, `ca`, `proxy` (the library's option names), which no dqs
  // user can pass; and `--debug` printed a base URL's password before the URL was refused.
  const LIBRARY_NAMES = /`(baseUrl|apiKey|ca|proxy|allowInsecureHttp)[`:]/;

  it('a base URL with credentials: --base-url and --api-key; --debug shows it masked', async () => {
    const r = await dqs(['datasets', '--base-url', 'http://u:PASSWORD-41@127.0.0.1:9/ok/', '--debug']);
    expect(r.code).toBe(ExitCode.usage);
    expect(r.stderr).toContain(
      'dqs datasets: Invalid --base-url: Expected no credentials in the URL: pass the key as --api-key (or DQS_API_KEY).',
    );
    expect(r.stderr).toContain('dqs [debug]: service http://***@127.0.0.1:9/ok/, API key not set');
    expect(r.stderr).not.toContain('PASSWORD-41');
    expect(r.stderr.split('\n').filter((l) => l.startsWith('dqs'))).not.toContainEqual(
      expect.stringMatching(LIBRARY_NAMES),
    );
  });

  it('a key over plain http to another host: --allow-insecure-http', async () => {
    const r = await dqs(['datasets', '--base-url', 'http://example.invalid/', '--api-key', 'k-1']);
    expect(r.code).toBe(ExitCode.usage);
    expect(r.stderr).toMatch(/use https:\/\/, or pass --allow-insecure-http\./);
    expect(r.stderr).not.toMatch(LIBRARY_NAMES);
  });

  it('a host name that does not resolve: --base-url or DQS_BASE_URL', async () => {
    const r = await dqs(['datasets', '--base-url', 'https://no-such-host.invalid/', '--api-key', 'k-1']);
    expect(r.code).toBe(ExitCode.service);
    expect(r.stderr).toMatch(/check the address \(--base-url or DQS_BASE_URL\)/);
    expect(r.stderr).not.toMatch(LIBRARY_NAMES);
  });

  it('a proxy that refuses the connection: named by where it was set (--proxy, or the variable)', async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });
    const flag = await dqs([
      'datasets',
      ...conn('https://dqs.example.test/'),
      '--proxy',
      `http://127.0.0.1:${closed}`,
    ]);
    expect(flag.stderr).toContain(
      `the proxy http://127.0.0.1:${closed} (from --proxy) refused the connection`,
    );
    expect(flag.stderr).not.toMatch(LIBRARY_NAMES);
    const env = await finishCli(
      startCli(['datasets', ...conn('http://dqs.example.test/'), '--allow-insecure-http'], {
        cwd: work,
        env: { HTTP_PROXY: `http://127.0.0.1:${closed}` },
      }),
    );
    expect(env.stderr).toContain(`(from HTTP_PROXY) refused the connection`);
    expect(env.stderr).not.toContain('HTTPS_PROXY');
  });
});
