// Prints vitest's JSON report as the plain closing line CI reads: "tests: N passed, N failed, N skipped".
// Exits non-zero when no test ran, so an empty run can never pass as green. Suites that run outside vitest
// (the packed-package consumer test, the notebook) come as `name=exitStatus` arguments and count as one
// test each.
import { readFileSync } from 'node:fs';

let report;
try {
  report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
} catch (err) {
  console.log('tests: 0 passed, 1 failed');
  console.error(`no test report: ${err.message}`);
  process.exit(1);
}
let passed = report.numPassedTests ?? 0;
let failed = (report.numFailedTests ?? 0) + (report.numRuntimeErrorTestSuites ?? 0);
for (const arg of process.argv.slice(3)) {
  const [name, status] = arg.split('=');
  if (status === '0') passed++;
  else {
    failed++;
    console.error(`${name}: failed (exit ${status})`);
  }
}
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(passed === 0 || failed > 0 ? 1 : 0);
