import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);

// The README points newcomers at this example; it must keep running (against the built dist/).
it('examples/quick.mjs runs end to end against the embedded emulator', async () => {
  const { stdout } = await run(process.execPath, ['examples/quick.mjs'], { timeout: 60_000 });
  expect(stdout).toMatch(/datasets: job_listings, store_locations, web_traffic, app_reviews/);
  expect(stdout).toMatch(/streamed rows: \d+/);
  const [, total] = stdout.match(/: (\d+) rows, truncated=false/) ?? [];
  expect(stdout).toContain(`streamed rows: ${total}`);
  expect(stdout).toMatch(/posted_date: 20\d\d-/);
});
