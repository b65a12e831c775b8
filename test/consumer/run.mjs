// The package as a consumer gets it: `npm pack`, the tarball installed into a fresh project, then
//   - TypeScript (strict, skipLibCheck false) under node16, nodenext, bundler and node10 resolution, each
//     importing both entry points, and a CommonJS-typed consumer (which reaches the ESM package through
//     `import()`, then runs);
//   - a plain ESM program: starts the emulator, queries, streams to Arrow IPC, reads the file back;
//   - toPolars() without nodejs-polars, and with nodejs-polars but without its native binary: a DqsError
//     that names what is missing;
//   - `npx dqs --help`;
//   - the same program and the same CLI commands under Node, Deno and Bun (both devDependencies of the
//     repository): stream, toTable, toArray, every writer, `dqs query` into every format; the bytes of
//     every output the same on the three runtimes (issue #47);
//   - the tarball's own contents: no source map that points at a file the package does not carry.
// Run by .ci/run (npm run test:consumer). Installing uses npm's cache first (`--prefer-offline`): the
// dependencies are those of the repository's lock, so they are normally cached already.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'dqs-consumer-'));
const keep = process.env.KEEP_CONSUMER === '1';
const started = Date.now();
const failures = [];

/** Runs one check (sync or async); a failure is recorded with the command's output, and the next goes on. */
async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    console.log(`ok   ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (err) {
    failures.push(name);
    console.log(`FAIL ${name}\n${indent(err.stdout ?? '')}${indent(err.stderr ?? '')}${indent(err.message)}`);
  }
}

function indent(text) {
  const s = String(text).trim();
  return s ? `${s.replace(/^/gm, '     ')}\n` : '';
}

/** Runs a command; throws with its output when it fails. */
function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...options, env: { ...process.env, ...options.env } });
  if (r.status !== 0) {
    const err = new Error(`${cmd} ${args.join(' ')} exited ${r.status ?? r.signal} in ${options.cwd ?? '.'}`);
    err.stdout = r.stdout;
    err.stderr = r.stderr;
    throw err;
  }
  return r.stdout;
}

/** `run`, without blocking: the type checks run two at a time (CI has two cores). */
function runAsync(cmd, args, options = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status) => {
      if (status === 0) return resolvePromise(stdout);
      const err = new Error(`${cmd} ${args.join(' ')} exited ${status} in ${options.cwd ?? '.'}`);
      err.stdout = stdout;
      err.stderr = stderr;
      reject(err);
    });
  });
}

function write(path, text) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

function versionOf(name) {
  return JSON.parse(readFileSync(join(repo, 'node_modules', name, 'package.json'), 'utf8')).version;
}

const STRICT = { strict: true, skipLibCheck: false, noEmit: true, target: 'ES2022', lib: ['ES2023'] };

/** Uses every export a TypeScript consumer is likely to touch, from both entry points. */
const CONSUMER_TS = `import { DatasetClient, DqsError, MissingPackageError, toArrowIpc, toPolars, type QueryResult } from 'dqs-client';
import { startEmulator, queryTotal, type Emulator } from 'dqs-client/emulator';

export async function main(): Promise<number> {
  const emu: Emulator = await startEmulator({ port: 0 });
  const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey });
  try {
    const result: QueryResult = await client.query('job_listings', { tickers: ['nasdaq:aapl'] });
    const ipc = toArrowIpc();
    ipc.destroy();
    const expected: number = queryTotal('job_listings', { tickers: ['nasdaq:aapl'] });
    // toPolars without nodejs-polars types: the structural DataFrame of this package.
    const df = await toPolars(await result.toTable()).catch((e: unknown) => e);
    if (df instanceof MissingPackageError && df instanceof DqsError) return -1;
    return result.total === expected ? (df as { height: number }).height : -2;
  } finally {
    await client.close();
    await emu.close();
  }
}
`;

const ESM_RUN = `import { createWriteStream, readFileSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { tableFromIPC } from 'apache-arrow';
import { DatasetClient, DqsError, toArrowIpc, toPolars } from 'dqs-client';
import { queryTotal, startEmulator } from 'dqs-client/emulator';

const emu = await startEmulator({ port: 0 });
const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey });
try {
  const body = { tickers: ['nasdaq:aapl', 'nyse:wmt'] };
  await pipeline(client.stream('job_listings', body), toArrowIpc(), createWriteStream('out.arrow'));
  const table = tableFromIPC(readFileSync('out.arrow'));
  const expected = queryTotal('job_listings', body);
  if (table.numRows !== expected || expected === 0) throw new Error(\`rows \${table.numRows}, expected \${expected}\`);
  const polars = await toPolars(table).then(() => 'loaded', (e) => e);
  console.log(JSON.stringify({
    rows: table.numRows,
    polars: polars instanceof DqsError ? { code: polars.code, missing: polars.missing, message: polars.message, cause: String(polars.cause?.code) } : polars,
  }));
} finally {
  await client.close();
  await emu.close();
}
`;

/**
 * One program a runtime runs from the project: the emulator, the client's stream into every writer,
 * toTable and toArray; prints the sha256 of each output and the row counts as JSON.
 */
const RUNTIME_RUN = `import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DatasetClient, toArrowIpc, toCsv, toJsonl, toParquet } from 'dqs-client';
import { queryTotal, startEmulator } from 'dqs-client/emulator';

const emu = await startEmulator({ port: 0 });
const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey });
const sha = (bytes) => createHash('sha256').update(bytes).digest('hex');
try {
  const body = { tickers: ['nasdaq:aapl', 'nyse:wmt', 'lse:tsco'] };
  const writers = {
    arrow: () => toArrowIpc(),
    arrows: () => toArrowIpc({ format: 'stream' }),
    parquet: () => toParquet(),
    csv: () => toCsv(),
    jsonl: () => toJsonl(),
  };
  const digests = {};
  for (const [name, writer] of Object.entries(writers)) {
    const hash = createHash('sha256');
    const sink = new Writable({ write(chunk, _encoding, callback) { hash.update(chunk); callback(); } });
    await pipeline(client.stream('web_traffic', body, { pageSize: 700 }), writer(), sink);
    digests[name] = hash.digest('hex');
  }
  const table = await (await client.query('web_traffic', body)).toTable();
  const rows = await (await client.query('web_traffic', body)).toArray({ dates: 'string' });
  console.log(JSON.stringify({
    digests,
    expected: queryTotal('web_traffic', body),
    table: table.numRows,
    array: rows.length,
    arrayDigest: sha(JSON.stringify(rows)),
  }));
} finally {
  await client.close();
  await emu.close();
}
`;

/** How each runtime runs a file of the project (Deno: npm packages from its node_modules). */
function runtimes() {
  const bin = (name) => join(repo, 'node_modules/.bin', name);
  const found = {
    node: [process.execPath],
    deno: [bin('deno'), 'run', '-A', '--node-modules-dir=manual'],
    bun: [bin('bun')],
  };
  for (const name of ['deno', 'bun']) {
    if (!existsSync(found[name][0]))
      throw new Error(`node_modules/.bin/${name} is missing: npm ci (${name} is a devDependency)`);
  }
  return found;
}

try {
  await step('npm pack', () => {
    run('npm', ['pack', '--pack-destination', work, '--silent'], { cwd: repo });
  });
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error('npm pack produced no tarball');

  await step('the tarball: every source map carries its sources, no map points outside the package', () => {
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    run('tar', ['-xzf', join(work, tarball), '-C', unpacked]);
    const pkg = join(unpacked, 'package');
    const bad = [];
    let maps = 0;
    for (const file of readdirSync(pkg, { recursive: true })) {
      if (!String(file).endsWith('.map')) continue;
      maps++;
      const map = JSON.parse(readFileSync(join(pkg, file), 'utf8'));
      map.sources.forEach((source, i) => {
        const inPackage = existsSync(resolve(dirname(join(pkg, file)), map.sourceRoot ?? '', source));
        if (!inPackage && typeof map.sourcesContent?.[i] !== 'string') bad.push(`${file} -> ${source}`);
      });
    }
    if (bad.length)
      throw new Error(`${bad.length} of ${maps} maps point at files not packed: ${bad.slice(0, 3)}`);
    for (const entry of [
      'dist/index.d.ts',
      'dist/emulator/index.d.ts',
      'dist/cli/main.js',
      'README.md',
      'LICENSE',
    ]) {
      if (!existsSync(join(pkg, entry))) throw new Error(`${entry} is not packed`);
    }
  });

  const project = join(work, 'project');
  write(
    join(project, 'package.json'),
    `${JSON.stringify({ name: 'consumer', private: true, type: 'module' })}\n`,
  );
  await step('npm install the tarball (+ typescript, @types/node)', () => {
    run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        join(work, tarball),
        `typescript@${versionOf('typescript')}`,
        `@types/node@${versionOf('@types/node')}`,
      ],
      { cwd: project },
    );
    if (existsSync(join(project, 'node_modules/nodejs-polars'))) {
      throw new Error('nodejs-polars was installed: it must stay an optional peer');
    }
  });

  const tsc = join(project, 'node_modules/typescript/bin/tsc');
  const configs = {
    node16: { module: 'node16', moduleResolution: 'node16' },
    nodenext: { module: 'nodenext', moduleResolution: 'nodenext' },
    bundler: { module: 'esnext', moduleResolution: 'bundler' },
    // Tools that ignore `exports` (tslab, older bundlers): `types` and `typesVersions` must suffice.
    node10: { module: 'commonjs', moduleResolution: 'node10', esModuleInterop: true },
  };
  const checks = Object.entries(configs).map(([name, options]) => async () => {
    await step(`tsc ${name}, strict, skipLibCheck false, both entry points`, async () => {
      const dir = join(project, `ts-${name}`);
      write(join(dir, 'index.ts'), CONSUMER_TS);
      write(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...STRICT, ...options } }));
      await runAsync('node', [tsc, '-p', dir], { cwd: project });
    });
  });
  const worker = async () => {
    for (let check = checks.shift(); check; check = checks.shift()) await check();
  };
  await Promise.all([worker(), worker()]);

  await step('a CommonJS-typed consumer type-checks and runs (import() of the ESM package)', () => {
    const dir = join(project, 'cjs');
    write(join(dir, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
    write(
      join(dir, 'index.ts'),
      `// A CommonJS file names the ESM package's types with resolution-mode 'import', and loads it with import().
import type { QueryResult } from 'dqs-client' with { 'resolution-mode': 'import' };

async function main(): Promise<void> {
  const { DatasetClient } = await import('dqs-client');
  const { startEmulator, queryTotal } = await import('dqs-client/emulator');
  const emu = await startEmulator({ port: 0 });
  const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey });
  try {
    const result: QueryResult = await client.query('store_locations', { tickers: ['nyse:wmt'] });
    const rows = await result.toArray();
    if (rows.length !== queryTotal('store_locations', { tickers: ['nyse:wmt'] })) throw new Error('row count');
    console.log(\`cjs rows \${rows.length}\`);
  } finally {
    await client.close();
    await emu.close();
  }
}
void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
`,
    );
    const config = {
      compilerOptions: {
        ...STRICT,
        module: 'node16',
        moduleResolution: 'node16',
        noEmit: false,
        outDir: 'out',
      },
      include: ['index.ts'],
    };
    write(join(dir, 'tsconfig.json'), JSON.stringify(config));
    run('node', [tsc, '-p', dir], { cwd: project });
    const out = run('node', [join(dir, 'out/index.js')], { cwd: dir });
    if (!/^cjs rows [1-9]\d*$/m.test(out)) throw new Error(`unexpected output: ${out}`);
  });

  await step('plain ESM: emulator, query, stream to IPC; toPolars names the missing peer', () => {
    write(join(project, 'run.mjs'), ESM_RUN);
    const out = JSON.parse(run('node', ['run.mjs'], { cwd: project }));
    if (!(out.rows > 0)) throw new Error(`no rows: ${JSON.stringify(out)}`);
    const { polars } = out;
    if (polars?.code !== 'DQS_MISSING_PACKAGE' || polars.missing !== 'nodejs-polars') {
      throw new Error(`toPolars without nodejs-polars: ${JSON.stringify(polars)}`);
    }
    if (!/not installed: npm install nodejs-polars/.test(polars.message)) throw new Error(polars.message);
  });

  await step('toPolars with nodejs-polars installed but its native binary missing says so', () => {
    // nodejs-polars' JavaScript without its platform package: what `--omit=optional` or a lock written
    // on another platform leaves behind.
    cpSync(join(repo, 'node_modules/nodejs-polars'), join(project, 'node_modules/nodejs-polars'), {
      recursive: true,
    });
    const out = JSON.parse(run('node', ['run.mjs'], { cwd: project }));
    const { polars } = out;
    const binary = `nodejs-polars-${process.platform}-${process.arch}`;
    if (polars?.code !== 'DQS_MISSING_PACKAGE' || !String(polars.missing).startsWith(binary)) {
      throw new Error(`expected the missing ${binary}…: ${JSON.stringify(polars)}`);
    }
    if (!/installed but its native binary/.test(polars.message) || polars.cause !== 'MODULE_NOT_FOUND') {
      throw new Error(JSON.stringify(polars));
    }
    rmSync(join(project, 'node_modules/nodejs-polars'), { recursive: true });
  });

  // The same program and CLI under every runtime; the outputs must be the same bytes everywhere.
  const outputs = {};
  for (const [runtime, command] of Object.entries(runtimes())) {
    await step(`${runtime}: stream into every writer, toTable, toArray, dqs query into every format`, () => {
      const dir = join(project, `on-${runtime}`);
      mkdirSync(dir);
      write(join(project, `run-${runtime}.mjs`), RUNTIME_RUN);
      const out = JSON.parse(run(command[0], [...command.slice(1), `run-${runtime}.mjs`], { cwd: project }));
      if (!(out.expected > 0) || out.table !== out.expected || out.array !== out.expected) {
        throw new Error(`rows: ${JSON.stringify(out)}`);
      }
      const cli = join(project, 'node_modules/dqs-client/dist/cli/main.js');
      const files = {};
      for (const ext of ['arrow', 'arrows', 'parquet', 'csv', 'jsonl']) {
        const file = join(dir, `aapl.${ext}`);
        run(
          command[0],
          [...command.slice(1), cli, 'query', 'job_listings', '--ticker', 'nasdaq:aapl', '--out', file, '-q'],
          {
            cwd: project,
            env: { XDG_CACHE_HOME: join(dir, 'cache') },
          },
        );
        files[ext] = createHash('sha256').update(readFileSync(file)).digest('hex');
      }
      outputs[runtime] = { digests: out.digests, arrayDigest: out.arrayDigest, files };
      const node = outputs.node;
      if (node && JSON.stringify(outputs[runtime]) !== JSON.stringify(node)) {
        throw new Error(
          `outputs differ from Node's:\n${JSON.stringify(outputs[runtime], null, 1)}\nNode:\n${JSON.stringify(node, null, 1)}`,
        );
      }
    });
  }

  await step('npx dqs --help', () => {
    const out = run('npx', ['--no-install', 'dqs', '--help'], { cwd: project });
    if (!/^Usage: dqs <command>/m.test(out)) throw new Error(`unexpected help: ${out.slice(0, 200)}`);
    const version = run('npx', ['--no-install', 'dqs', '--version'], { cwd: project }).trim();
    const expected = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).version;
    if (!version.includes(expected)) throw new Error(`dqs --version said ${version}, package is ${expected}`);
  });
} catch (err) {
  failures.push(String(err?.message ?? err));
  console.log(`FAIL ${err?.message ?? err}`);
} finally {
  if (keep) console.log(`kept ${relative(process.cwd(), work) || work}`);
  else rmSync(work, { recursive: true, force: true });
}

const seconds = ((Date.now() - started) / 1000).toFixed(1);
if (failures.length) {
  console.log(`consumer test: ${failures.length} failed (${seconds} s)`);
  process.exit(1);
}
console.log(`consumer test: all passed (${seconds} s)`);
