/**
 * Finds the examples of the Markdown docs for the docs-as-tests suite (test/e2e/docs.test.ts). The
 * convention is written down for contributors in docs/contributing-docs.md; in short:
 *
 * - A fenced block whose language is `ts`/`typescript`, `js`/`javascript`/`mjs` or `sh`/`bash`/`shell` is
 *   an example and is run. Other languages (`sql`, `python`, `text`, none) are not.
 * - `<!-- not-run: reason -->` on the last non-blank line before the fence leaves it out; the reason is
 *   required.
 * - `<!-- continues -->` there runs the block after the previous example of the same file, as one
 *   program (for a page that builds one program up in steps).
 * - Info-string attributes after the language: `file=name.cjs` names the file a JS block is written to
 *   (its extension decides ESM or CommonJS).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export type ExampleKind = 'js' | 'sh';

export interface Example {
  /** Repository-relative path of the Markdown file. */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly kind: ExampleKind;
  /** The language as written (`ts`, `js`, `sh` ...). */
  readonly lang: string;
  readonly code: string;
  /** The `file=` attribute, when given. */
  readonly fileName: string | undefined;
  /** Set by `<!-- not-run: reason -->`. */
  readonly notRun: string | undefined;
  /** Set by `<!-- continues -->`. */
  readonly continues: boolean;
}

/** A marker the parser could not honour: a reason missing, a marker before no fence. */
export interface MarkerProblem {
  readonly file: string;
  readonly line: number;
  readonly message: string;
}

const KINDS: Readonly<Record<string, ExampleKind>> = {
  ts: 'js',
  typescript: 'js',
  js: 'js',
  javascript: 'js',
  mjs: 'js',
  sh: 'sh',
  bash: 'sh',
  shell: 'sh',
};

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)(.*)$/;
const MARKER = /^\s*<!--\s*(not-run|continues)\b\s*:?\s*(.*?)\s*-->\s*$/;

/** README.md and every Markdown file under docs/, in a stable order. */
export function docFiles(repo: string): string[] {
  const files = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(repo, dir), { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  walk('docs');
  return files;
}

export function parseExamples(
  file: string,
  text: string,
): { examples: Example[]; problems: MarkerProblem[] } {
  const lines = text.split(/\r?\n/);
  const examples: Example[] = [];
  const problems: MarkerProblem[] = [];
  let pending: { name: string; reason: string; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const marker = MARKER.exec(line);
    if (marker) {
      if (pending) problems.push({ file, line: pending.line, message: 'a marker not followed by a fence' });
      pending = { name: marker[1]!, reason: marker[2]!, line: i + 1 };
      continue;
    }
    const fence = FENCE.exec(line);
    if (!fence) {
      if (line.trim() !== '' && pending) {
        problems.push({
          file,
          line: pending.line,
          message: `<!-- ${pending.name} --> not right before a fence`,
        });
        pending = undefined;
      }
      continue;
    }
    const [, open, lang = '', rest = ''] = fence;
    const close = new RegExp(`^ {0,3}${open![0] === '`' ? '`' : '~'}{${open!.length},}\\s*$`);
    let end = i + 1;
    while (end < lines.length && !close.test(lines[end]!)) end++;
    const code = lines.slice(i + 1, end).join('\n');
    const kind = KINDS[lang.toLowerCase()];
    if (pending?.name === 'not-run' && pending.reason === '') {
      problems.push({ file, line: pending.line, message: '<!-- not-run: … --> needs a reason' });
    }
    if (pending && !kind) {
      problems.push({ file, line: pending.line, message: `a marker before a \`${lang || 'plain'}\` block` });
    }
    if (kind) {
      examples.push({
        file,
        line: i + 1,
        kind,
        lang,
        code,
        fileName: /(?:^|\s)file=(\S+)/.exec(rest)?.[1],
        notRun: pending?.name === 'not-run' ? pending.reason || '(no reason)' : undefined,
        continues: pending?.name === 'continues',
      });
    }
    pending = undefined;
    i = end;
  }
  if (pending) problems.push({ file, line: pending.line, message: 'a marker at the end of the file' });
  return { examples, problems };
}

/** One program to run: an example, or a chain of examples joined by `<!-- continues -->`. */
export interface Program {
  readonly file: string;
  readonly kind: ExampleKind;
  readonly parts: readonly Example[];
  /** `docs/cli.md:42` or `docs/cli.md:42+57` for a chain. */
  readonly name: string;
}

/**
 * The programs of one file: each runnable example, or a chain ending in it. A block that is continued
 * runs only as part of its chain (its own lines are checked there), so nothing runs twice.
 */
export function programsOf(examples: readonly Example[]): { programs: Program[]; problems: MarkerProblem[] } {
  const programs: Program[] = [];
  const problems: MarkerProblem[] = [];
  let last: Program | undefined;
  for (const example of examples) {
    if (example.notRun !== undefined) continue;
    if (example.continues) {
      if (!last || last.kind !== example.kind) {
        problems.push({
          file: example.file,
          line: example.line,
          message: '<!-- continues --> with no earlier runnable example of the same kind in the file',
        });
        continue;
      }
      programs.splice(programs.indexOf(last), 1);
      const parts = [...last.parts, example];
      last = { ...last, parts, name: `${last.name}+${example.line}` };
    } else {
      last = {
        file: example.file,
        kind: example.kind,
        parts: [example],
        name: `${example.file}:${example.line}`,
      };
    }
    programs.push(last);
  }
  return { programs, problems };
}

export function examplesOf(repo: string): {
  examples: Example[];
  programs: Program[];
  problems: MarkerProblem[];
} {
  const examples: Example[] = [];
  const programs: Program[] = [];
  const problems: MarkerProblem[] = [];
  for (const file of docFiles(repo)) {
    const parsed = parseExamples(relative(repo, join(repo, file)), readFileSync(join(repo, file), 'utf8'));
    const chained = programsOf(parsed.examples);
    examples.push(...parsed.examples);
    programs.push(...chained.programs);
    problems.push(...parsed.problems, ...chained.problems);
  }
  return { examples, programs, problems };
}
