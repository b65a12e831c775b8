// examples/notebook.ipynb executed in Deno's Jupyter kernel, as a user runs it, and its outputs checked
// against what the emulator serves (rows per ticker, the HTML previews), not just "no error".
//
// Needs: dist/ (npm run build), Deno from the devDependency `deno`, and `jupyter nbconvert` (Debian's
// jupyter-nbconvert; .ci/run installs it when missing). `npm run test:notebook`.
//
// It leaves nothing behind: the notebook's own temporary lake and DuckDB files go to a TMPDIR of ours
// (checked empty afterwards), its result cache to an XDG_CACHE_HOME of ours, examples/ is compared before
// and after, the executed copy is written
// outside the checkout, and the `deno` kernelspec that `deno jupyter --install` writes to the user's
// Jupyter directory is put back as it was.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const examples = join(repo, 'examples');
const started = Date.now();
const problems = [];
const check = (ok, message) => {
  if (!ok) problems.push(message);
};

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...options });
  if (r.status !== 0) {
    throw new Error(
      `${cmd} ${args.join(' ')} exited ${r.status ?? r.signal}\n${r.stdout ?? ''}${r.stderr ?? ''}`,
    );
  }
  return r.stdout;
}

if (!existsSync(join(repo, 'dist/index.js'))) throw new Error('dist/ is missing: npm run build first');
const deno = join(repo, 'node_modules/.bin/deno');
if (!existsSync(deno)) throw new Error('node_modules/.bin/deno is missing: npm ci (deno is a devDependency)');
const jupyter = spawnSync('jupyter', ['nbconvert', '--version'], { encoding: 'utf8' });
if (jupyter.status !== 0) {
  throw new Error('jupyter nbconvert is missing: apt-get install -y jupyter-nbconvert (.ci/run does it)');
}

const work = mkdtempSync(join(tmpdir(), 'dqs-notebook-'));
const kernelTmp = join(work, 'tmp');
mkdirSync(kernelTmp);
const dataDir = run('jupyter', ['--data-dir']).trim();
const kernelDir = join(dataDir, 'kernels', 'deno');
const savedKernel = join(work, 'saved-kernel');
const hadKernel = existsSync(kernelDir);
if (hadKernel) cpSync(kernelDir, savedKernel, { recursive: true });
const examplesBefore = readdirSync(examples).sort().join(',');

let executed;
try {
  run(deno, ['jupyter', '--install', '--force']);
  const kernel = JSON.parse(readFileSync(join(kernelDir, 'kernel.json'), 'utf8'));
  check(kernel.argv?.[0]?.startsWith(join(repo, 'node_modules')), `kernel is not this deno: ${kernel.argv}`);
  run(
    'jupyter',
    [
      'nbconvert',
      // Deno's kernel sometimes sends a cell's result just after the cell's idle message, which
      // nbconvert would drop: late_results.py records such late output (see its header).
      `--config=${join(repo, 'test/notebook/late_results.py')}`,
      '--to',
      'notebook',
      '--execute',
      'notebook.ipynb',
      '--output-dir',
      work,
      '--output',
      'executed.ipynb',
      '--ExecutePreprocessor.timeout=300',
    ],
    // The kernel starts in the notebook's folder, where deno.json maps `dqs-client` to dist/.
    {
      cwd: examples,
      // The notebook's client caches results (cache: true): in a directory of ours, not the user's.
      env: { ...process.env, TMPDIR: kernelTmp, XDG_CACHE_HOME: join(work, 'cache'), NO_COLOR: '1' },
    },
  );
  executed = JSON.parse(readFileSync(join(work, 'executed.ipynb'), 'utf8'));
} finally {
  rmSync(kernelDir, { recursive: true, force: true });
  if (hadKernel) cpSync(savedKernel, kernelDir, { recursive: true });
}

// What the emulator serves, from the same package the notebook imported.
const { queryTotal, queryRows, datasetFields } = await import(join(repo, 'dist/emulator/index.js'));
const aapl = queryTotal('job_listings', { tickers: ['nasdaq:aapl'] });
const wmt = queryTotal('job_listings', { tickers: ['nyse:wmt'] });
const both = queryTotal('job_listings', { tickers: ['nasdaq:aapl', 'nyse:wmt'] });
const fmt = (n) => n.toLocaleString('en-US');
const location = datasetFields('job_listings').findIndex((f) => f.id === 'location');
const perLocation = new Map();
for (const row of queryRows('job_listings', { tickers: ['nasdaq:aapl'] }, {}, 1, aapl)) {
  perLocation.set(row[location], (perLocation.get(row[location]) ?? 0) + 1);
}
const topLocations = [...perLocation].sort((a, b) => b[1] - a[1] || String(a[0]).localeCompare(b[0]));

// Deno's inspect colours its text/plain output (ANSI escapes).
const plain = (text) => text.replace(/\x1b\[[0-9;]*m/g, '');
const cells = executed.cells.filter((c) => c.cell_type === 'code');
const textOf = (cell, type) =>
  plain(
    cell.outputs
      .filter((o) => o.data?.[type] !== undefined)
      .map((o) => [].concat(o.data[type]).join(''))
      .join('\n'),
  );
const cellWith = (needle) => cells.find((c) => [].concat(c.source).join('').includes(needle));

cells.forEach((cell, i) => {
  check(
    cell.execution_count === i + 1,
    `code cell ${i + 1} was not executed in order (${cell.execution_count})`,
  );
  for (const o of cell.outputs) {
    check(o.output_type !== 'error', `code cell ${i + 1} failed: ${o.ename}: ${o.evalue}`);
    if (o.output_type === 'stream' && o.name === 'stderr')
      check(false, `cell ${i + 1} wrote to stderr: ${o.text}`);
  }
});

const resultCell = cellWith("client.query('job_listings'");
check(/<b>job_listings<\/b>/.test(textOf(resultCell, 'text/html')), 'the result cell has no HTML title');
check(
  textOf(resultCell, 'text/html').includes(`<b>${fmt(both)}</b> rows`),
  `the result does not say ${both} rows`,
);
check(
  /ticker\s+Dictionary<Int32, Utf8>/.test(textOf(resultCell, 'text/plain')),
  'the result lists no ticker type',
);

const previewHtml = textOf(cellWith('await preview(result'), 'text/html');
check(
  (previewHtml.match(/<tr>/g) ?? []).length === 5 + 1,
  'preview(result, { rows: 5 }) is not 5 rows + header',
);
check(previewHtml.includes(`showing 5 of ${fmt(both)} rows`), 'the preview does not say "showing 5 of …"');
check(previewHtml.includes('nasdaq:aapl'), 'the preview shows no ticker');

const tableHtml = textOf(cellWith('preview(table'), 'text/html');
check(tableHtml.includes(`<b>${fmt(both)}</b> rows`) && tableHtml.includes('showing 3 of'), 'table preview');

const polars = textOf(cellWith('toPolars(table'), 'text/html');
check(
  polars.includes(`<td>nasdaq:aapl</td><td>${aapl}</td>`) &&
    polars.includes(`<td>nyse:wmt</td><td>${wmt}</td>`),
  `Polars counts per ticker are not ${aapl} / ${wmt}: ${polars.slice(0, 300)}`,
);

const arquero = textOf(cellWith('aq.fromArrow'), 'text/plain');
check(
  arquero.includes(`ticker: "nasdaq:aapl", count: ${aapl}`) &&
    arquero.includes(`ticker: "nyse:wmt", count: ${wmt}`),
  `arquero counts: ${arquero}`,
);

const duck = textOf(cellWith('toDuckDB('), 'text/plain');
for (const [name, n] of topLocations.slice(0, 3)) {
  check(
    duck.includes(`location: "${name}", n: ${n}`),
    `DuckDB top locations: expected ${name} ${n} in ${duck}`,
  );
}

const lake = textOf(cellWith('exportPartitioned('), 'text/plain');
for (const t of ['lse:tsco', 'nasdaq:aapl', 'nyse:wmt']) {
  const n = queryTotal('web_traffic', { tickers: [t] });
  check(lake.includes(`ticker: "${t}", n: ${n}`), `the partitioned dataset read back: ${t} should have ${n}`);
}

// Nothing left behind.
check(readdirSync(kernelTmp).length === 0, `the notebook left ${readdirSync(kernelTmp)} in its TMPDIR`);
check(readdirSync(examples).sort().join(',') === examplesBefore, 'the notebook left files in examples/');
check(!existsSync(join(examples, 'lake')), 'examples/lake is left behind');
rmSync(work, { recursive: true, force: true });

const seconds = ((Date.now() - started) / 1000).toFixed(1);
if (problems.length) {
  console.log(`notebook test: ${problems.length} problems (${seconds} s)\n- ${problems.join('\n- ')}`);
  process.exit(1);
}
console.log(
  `notebook test: ${cells.length} code cells executed in Deno's kernel, outputs as expected (${seconds} s)`,
);
