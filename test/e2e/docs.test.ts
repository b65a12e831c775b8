/**
 * Docs as tests: every fenced ts/js/sh example of README.md and docs/**\/*.md runs against an emulator,
 * unless it is marked `<!-- not-run: reason -->`. A doc that lies fails here, named by file:line.
 *
 * How an example reaches the service (docs/contributing-docs.md): the harness starts one emulator and
 * gives every example DQS_BASE_URL and DQS_API_KEY, which `new DatasetClient()` and `dqs` read, as they
 * would read a user's. JS/TS examples import `dqs-client` and `dqs-client/emulator` as a user would
 * (the package's own exports, resolved to dist/); `dqs` in a shell example is dist/cli/main.js. Each
 * Markdown file's examples run in order in one fresh directory outside the checkout (with a result cache
 * of their own), removed afterwards; files run concurrently.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/index.js';
import { examplesOf, type Program, parseExamples, programsOf } from '../doc-examples.js';

const REPO = resolve(import.meta.dirname, '../..');
const CLI = join(REPO, 'dist/cli/main.js');
const TIMEOUT_MS = 60_000;

let emu: Emulator;
/**
 * Where the examples run: a temporary directory outside the checkout (an `npm ci` or `npm test` in an
 * example must not reach the repository's package.json), with a node_modules of links to the
 * repository's packages plus `dqs-client` itself, so imports resolve as in a user's project.
 */
let scratch: string;
let bin: string;

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error('dist/ is missing: `npm run build` first (npm test does it)');
  emu = await startEmulator({ port: 0, apiKey: 'doc-test-key' });
  scratch = await mkdtemp(join(tmpdir(), 'dqs-docs-'));
  await writeFile(join(scratch, 'package.json'), '{ "name": "doc-examples", "private": true }\n');
  const modules = join(scratch, 'node_modules');
  await mkdir(modules);
  // One link per package, scopes as real folders: a tool that walks into a linked scope folder would
  // be walking in the repository's node_modules.
  for (const name of await readdir(join(REPO, 'node_modules'))) {
    if (name.startsWith('.')) continue;
    if (!name.startsWith('@')) {
      await symlink(join(REPO, 'node_modules', name), join(modules, name));
      continue;
    }
    await mkdir(join(modules, name));
    for (const sub of await readdir(join(REPO, 'node_modules', name))) {
      await symlink(join(REPO, 'node_modules', name, sub), join(modules, name, sub));
    }
  }
  await symlink(REPO, join(modules, 'dqs-client'));
  bin = join(scratch, 'bin');
  await mkdir(bin);
  await writeFile(join(bin, 'dqs'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
  await chmod(join(bin, 'dqs'), 0o755);
  // npm is not for examples: an `npm install` here once emptied the repository's packages through the
  // links above. An example that installs or runs the checkout's scripts is marked not-run instead.
  await writeFile(
    join(bin, 'npm'),
    '#!/bin/sh\necho "doc-test: npm is not run in doc examples (mark the example not-run)" >&2\nexit 97\n',
  );
  await chmod(join(bin, 'npm'), 0o755);
});

afterAll(async () => {
  await emu?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

interface Outcome {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command in its own process group. On timeout the whole group is killed, and when the command
 * exits anything it left running in the background (a `dqs serve &`) is killed too: it would hold the
 * output pipes open, and leaking servers from a doc test is no better.
 */
function exec(command: string, args: string[], cwd: string): Promise<Outcome> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: {
        ...process.env,
        DQS_BASE_URL: emu.url,
        DQS_API_KEY: emu.apiKey,
        PATH: `${bin}:${process.env.PATH ?? ''}`,
        // Each doc's own result cache (the CLI caches by default): docs running at once, or an earlier
        // run, must not answer each other's queries.
        XDG_CACHE_HOME: `${cwd}.cache`,
        NO_COLOR: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, TIMEOUT_MS);
    let stdout = '';
    let stderr = '';
    let status: number | null = null;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      status = timedOut ? null : code;
      killGroup();
    });
    child.on('close', () => {
      clearTimeout(timer);
      resolvePromise({ status, stdout, stderr });
    });
  });
}

/** Shell: strict mode, and a trap that says which line of which doc failed (mapped from the script's). */
function shellScript(program: Program): { script: string; lineOf: (n: number) => string } {
  const preamble = [
    'set -euo pipefail',
    // `npx dqs` of a user's project is this checkout's dqs (the consumer test runs the real `npx dqs`).
    'npx() { if [ "$1" = dqs ]; then shift; dqs "$@"; else command npx "$@"; fi; }',
    `trap 'echo "doc-test: failed at line $LINENO: $BASH_COMMAND (exit $?)" >&2' ERR`,
  ];
  const map: string[] = preamble.map(() => '(preamble)');
  const body: string[] = [];
  for (const part of program.parts) {
    part.code.split('\n').forEach((text, i) => {
      body.push(text);
      map.push(`${part.file}:${part.line + 1 + i}`);
    });
  }
  return { script: [...preamble, ...body].join('\n'), lineOf: (n) => map[n - 1] ?? `script line ${n}` };
}

/** JS/TS: one module; TypeScript is transpiled (types are not checked here), line breaks kept. */
function jsModule(program: Program): { name: string; source: string } {
  const first = program.parts[0]!;
  const name = first.fileName ?? 'example.mjs';
  const commonjs = /\.c[jt]s$/.test(name);
  const source = program.parts.map((p) => `// ${p.file}:${p.line}\n${p.code}`).join('\n');
  if (!program.parts.some((p) => p.lang === 'ts' || p.lang === 'typescript')) return { name, source };
  const out = ts.transpileModule(source, {
    compilerOptions: {
      module: commonjs ? ts.ModuleKind.CommonJS : ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
    },
    fileName: name.replace(/\.c?[jt]s$|\.mjs$/, commonjs ? '.cts' : '.mts'),
  });
  return { name: name.replace(/\.[cm]?ts$/, commonjs ? '.cjs' : '.mjs'), source: out.outputText };
}

/** Runs one program in `dir`; throws an error naming the doc's file:line and the output when it fails. */
async function runProgram(program: Program, dir: string): Promise<Outcome> {
  let outcome: Outcome;
  let where = program.name;
  if (program.kind === 'sh') {
    const { script, lineOf } = shellScript(program);
    outcome = await exec('bash', ['-c', script], dir);
    const line = /doc-test: failed at line (\d+)/.exec(outcome.stderr);
    if (line) where = lineOf(Number(line[1]));
  } else {
    const { name, source } = jsModule(program);
    await writeFile(join(dir, name), source);
    outcome = await exec(process.execPath, [name], dir);
  }
  if (outcome.status !== 0) {
    const tail = (s: string) => s.trim().split('\n').slice(-25).join('\n');
    throw new Error(
      `${where}: the example exits ${outcome.status ?? 'killed (timeout)'}\n--- stderr\n${tail(outcome.stderr)}\n--- stdout\n${tail(outcome.stdout)}`,
    );
  }
  return outcome;
}

const { examples, programs, problems } = examplesOf(REPO);
const byFile = new Map<string, Program[]>();
for (const program of programs) byFile.set(program.file, [...(byFile.get(program.file) ?? []), program]);

it('every marker has a reason and stands right before a ts/js/sh fence', () => {
  expect(problems.map((p) => `${p.file}:${p.line}: ${p.message}`)).toEqual([]);
  // Sanity: the docs do have examples, and most of them run.
  expect(programs.length).toBeGreaterThan(examples.filter((e) => e.notRun !== undefined).length);
});

// The Markdown files run at once (most of an example's time is spent waiting on processes it starts);
// the examples of one file run in order, in that file's directory, as a reader would run them. A
// failure names the doc's file:line; the examples after it in that file are not run.
describe.concurrent('docs', () => {
  for (const [file, list] of byFile) {
    it(file, { timeout: (TIMEOUT_MS + 5_000) * list.length }, async () => {
      const dir = await mkdtemp(join(scratch, `${file.replaceAll('/', '_')}-`));
      for (const program of list) await runProgram(program, dir);
    });
  }
});

describe('the harness', () => {
  const doc = [
    '# t',
    '```ts',
    "const n: number = 1; console.log('one', n);",
    '```',
    '<!-- continues -->',
    '```ts',
    "if (n !== 1) throw new Error('lost n');",
    '```',
    '',
    '<!-- not-run: talks to the real service -->',
    '```sh',
    'curl https://example.invalid',
    '```',
    '```sql',
    'SELECT 1',
    '```',
    '```sh',
    'dqs datasets --json | grep -q job_listings',
    'false',
    'echo never',
    '```',
    '```js',
    "throw new Error('this doc lies');",
    '```',
  ].join('\n');
  const parsed = parseExamples('docs/x.md', doc);
  const { programs: chained } = programsOf(parsed.examples);

  it('finds ts/js/sh blocks, honours not-run and continues, names file:line', () => {
    expect(parsed.problems).toEqual([]);
    expect(parsed.examples.map((e) => [e.line, e.kind, e.notRun ?? null, e.continues])).toEqual([
      [2, 'js', null, false],
      [6, 'js', null, true],
      [11, 'sh', 'talks to the real service', false],
      [17, 'sh', null, false],
      [22, 'js', null, false],
    ]);
    expect(chained.map((p) => p.name)).toEqual(['docs/x.md:2+6', 'docs/x.md:17', 'docs/x.md:22']);
    const bad = parseExamples('docs/y.md', '<!-- not-run: -->\n```sh\nls\n```\n<!-- continues -->\ntext\n');
    expect(bad.problems.map((p) => p.line)).toEqual([1, 5]);
  });

  it('runs a chain as one program, and a failing example fails naming its doc line', async () => {
    const dir = await mkdtemp(join(scratch, 'harness-'));
    const [chain, shell, lie] = chained;
    expect((await runProgram(chain!, dir)).stdout).toBe('one 1\n');
    await expect(runProgram(shell!, dir)).rejects.toThrow(/^docs\/x\.md:19: the example exits 1/);
    await expect(runProgram(lie!, dir)).rejects.toThrow(/^docs\/x\.md:22: [\s\S]*this doc lies/);
  });
});
