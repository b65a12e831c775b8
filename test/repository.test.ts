/**
 * The checkout itself: what `git status` shows after the commands the README gives. `npm pack` (the way
 * to try the package as a consumer gets it, docs/packaging.md) leaves `dqs-client-<version>.tgz` in the
 * checkout, which showed up as a file to commit (issue #47).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './cli-helpers.js';

describe('the repository', () => {
  it("ignores npm pack's tarball and the files the README's commands write", () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const made = [`dqs-client-${version}.tgz`, 'aapl.parquet', 'dist/index.js'];
    // `git check-ignore` prints each path that is ignored (exit 1 when none is).
    const ignored = execFileSync('git', ['check-ignore', '--no-index', ...made], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(ignored.trim().split('\n')).toEqual(made);
  });
});
