// BodyBuffers (src/decode/body-buffers.ts): the page bodies a stream keeps between pages. Regression: it
// kept four spare bodies for the whole stream (~11 MB of the 500k-row IPC export's live memory on
// loopback, where two requests are in flight), and peak RSS follows the live ArrayBuffers.
import { describe, expect, it } from 'vitest';
import { BodyBuffers } from '../src/decode/body-buffers.js';

describe('BodyBuffers', () => {
  it('reuses a body given back for the next page of about its size', () => {
    const pool = new BodyBuffers();
    const body = pool.take(1000);
    pool.release(body);
    expect(pool.take(900)).toBe(body);
  });

  it('keeps no more than two spare bodies', () => {
    const pool = new BodyBuffers();
    const bodies = [1, 2, 3, 4].map(() => pool.take(1000));
    for (const b of bodies) pool.release(b);
    const again = [1, 2, 3, 4].map(() => pool.take(1000));
    expect(again.filter((b) => bodies.includes(b)).length).toBe(2);
  });
});
