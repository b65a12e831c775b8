// The public surface (the built .d.ts of `dqs-client` and `dqs-client/emulator`) must match the committed
// report api/dqs-client.api.md, so a change of the API shows in review. After a deliberate change:
// `npm run api:update` and commit the report. Runs on dist/ (`npm test` builds first).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

it('the public API is the one in api/dqs-client.api.md (after a deliberate change: npm run api:update)', async () => {
  const run = await promisify(execFile)(process.execPath, ['scripts/api-report.mjs', '--check']).then(
    ({ stdout }) => ({ ok: true, out: stdout }),
    (err: { stdout: string; stderr: string }) => ({ ok: false, out: `${err.stdout}${err.stderr}` }),
  );
  expect(run.ok, run.out).toBe(true);
});
