/**
 * The shape of the source tree, held by tests: layers that only point down (no import cycle between
 * files, nor between folders, where a folder or a root file such as client.ts is one node), small
 * modules, p-queue where the design card puts it, and no internal type in the package's index.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Relative imports of a file (type-only ones too: a cycle of types is still a cycle of meaning). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [
    ...text.matchAll(/(?:import|export)\s[^'";]*?from\s+['"](\.[^'"]+)['"]/g),
    ...text.matchAll(/import\(\s*['"](\.[^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]!);
  return specs.map((spec) => {
    const target = join(dirname(file), spec).replace(/\.js$/, '.ts');
    return existsSync(target) ? target : target.replace(/\.ts$/, `${sep}index.ts`);
  });
}

/** Strongly connected components with more than one node (Tarjan). */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

const files = sourceFiles(src);
const fileGraph = new Map(
  files.map((f) => [relative(src, f), new Set(importsOf(f).map((t) => relative(src, t)))]),
);
/** A folder under src/ (`query/`), or a root file (`client.ts`). */
const nodeOf = (file: string) => (file.includes(sep) ? `${file.split(sep)[0]}/` : file);

describe('architecture', () => {
  it('has no import cycle between files', () => {
    expect(cycles(fileGraph)).toEqual([]);
  });

  it('has no import cycle between folders (a root file counts as one)', () => {
    const folders = new Map<string, Set<string>>();
    for (const [file, targets] of fileGraph) {
      const from = nodeOf(file);
      const edges = folders.get(from) ?? new Set<string>();
      for (const target of targets) if (nodeOf(target) !== from) edges.add(nodeOf(target));
      folders.set(from, edges);
    }
    expect(cycles(folders)).toEqual([]);
  });

  it('keeps every source file at 700 lines or fewer', () => {
    const long = files
      .map((f) => ({ file: relative(src, f), lines: readFileSync(f, 'utf8').split('\n').length }))
      .filter((f) => f.lines > 700);
    expect(long).toEqual([]);
  });

  it('runs the page scheduler and every pool (fan-out, partitioned export, ticker check, split) on p-queue, as the design card says', () => {
    for (const file of [
      'query/scheduler.ts',
      'analytics/fan-out.ts',
      'analytics/partitioned-export.ts',
      'tickers/coverage.ts',
    ]) {
      expect(readFileSync(join(src, file), 'utf8'), file).toMatch(/^import PQueue from 'p-queue';$/m);
    }
  });

  it('keeps the engine and the cache contracts out of the package index', () => {
    const dts = readFileSync(join(root, 'dist', 'index.d.ts'), 'utf8');
    for (const name of [
      'LocalRows',
      'LocalStep',
      'LocalMark',
      'LocalReadContext',
      'ResultSource',
      'KeptPage',
    ]) {
      expect(dts).not.toMatch(new RegExp(`\\b${name}\\b`));
    }
    const result = readFileSync(join(root, 'dist', 'query', 'query-result.d.ts'), 'utf8');
    for (const member of ['client', 'scheduler', 'local', 'takeFirstPage']) {
      expect(result).not.toMatch(new RegExp(`^\\s*(readonly )?${member}\\b`, 'm'));
    }
  });
});
