/** `faultPlan()`: seeded, reproducible, counted; and what each of its faults does on the wire. */
import { describe, expect, it } from 'vitest';
import { FAILING_KINDS, FAULT_KINDS, type FaultContext, faultPlan } from '../src/emulator/index.js';
import { InvalidArgumentError } from '../src/index.js';
import { setup } from './helpers.js';

function ctx(requestNumber: number, method = 'GET'): FaultContext {
  return { method, path: '/datasets/', query: {}, headers: {}, requestNumber };
}

function draws(seed: number, n: number, options: Partial<Parameters<typeof faultPlan>[0]> = {}) {
  const plan = faultPlan({ seed, ...options });
  return Array.from({ length: n }, (_, i) => plan.decide(ctx(i + 1))?.kind ?? '-');
}

describe('faultPlan', () => {
  it('is a pure function of (seed, request number): same seed, same plan, in any order', () => {
    const a = draws(42, 2000);
    expect(draws(42, 2000)).toEqual(a);
    expect(draws(43, 2000)).not.toEqual(a);
    const plan = faultPlan({ seed: 42 });
    const backwards = Array.from({ length: 2000 }, (_, i) => plan.decide(ctx(2000 - i))?.kind ?? '-');
    expect(backwards.reverse()).toEqual(a);
    // Parameters too (latency, cut points).
    expect(plan.decide(ctx(7))).toEqual(faultPlan({ seed: 42 }).decide(ctx(7)));
  });

  it('injects at about `rate`, every kind about equally often', () => {
    const kinds = draws(7, 20_000, { rate: 0.1 });
    const faults = kinds.filter((k) => k !== '-');
    expect(faults.length / kinds.length).toBeGreaterThan(0.09);
    expect(faults.length / kinds.length).toBeLessThan(0.11);
    for (const kind of FAULT_KINDS) {
      const share = faults.filter((k) => k === kind).length / faults.length;
      expect(share).toBeGreaterThan(1 / FAULT_KINDS.length - 0.03);
      expect(share).toBeLessThan(1 / FAULT_KINDS.length + 0.03);
    }
    expect(draws(7, 1000, { rate: 0 }).every((k) => k === '-')).toBe(true);
    expect(draws(7, 1000, { rate: 1, kinds: ['503'] }).every((k) => k === '503')).toBe(true);
  });

  it('never draws a body fault (cut, trickle) for HEAD, which has no body', () => {
    const plan = faultPlan({ seed: 3, rate: 1, kinds: ['cut', 'trickle', '503'] });
    for (let n = 1; n <= 500; n++) {
      expect(plan.decide(ctx(n, 'HEAD'))?.kind).toBe('503');
      expect(['cut', 'trickle', '503']).toContain(plan.decide(ctx(n))?.kind);
    }
    expect(faultPlan({ seed: 3, rate: 1, kinds: ['cut'] }).decide(ctx(1, 'HEAD'))).toBeUndefined();
  });

  it('applies `at` by request number over the draw, and `only` to the draw alone', () => {
    const plan = faultPlan({
      seed: 1,
      rate: 1,
      kinds: ['500'],
      only: (r) => r.method === 'POST',
      at: { 2: 'reset', 3: { kind: 'status', status: 418 } },
    });
    expect(plan(ctx(1))).toBeUndefined(); // not eligible
    expect(plan(ctx(2))).toEqual({ kind: 'reset' }); // `at` applies regardless of `only`
    expect(plan(ctx(3))).toEqual({ kind: 'status', status: 418 });
    expect(plan(ctx(4, 'POST'))).toEqual({ kind: 'status', status: 500 });
    expect(plan.injected).toMatchObject({ reset: 1, custom: 1, '500': 1, '503': 0 });
    expect(plan.failures).toBe(2); // `custom` is not counted: the plan cannot know what it does
    expect(plan.log.map((f) => [f.requestNumber, f.kind])).toEqual([
      [2, 'reset'],
      [3, 'custom'],
      [4, '500'],
    ]);
    plan.resetCounts();
    expect(plan.failures).toBe(0);
    expect(plan.log).toHaveLength(0);
  });

  it('counts failing kinds as failures, latency and trickle not', () => {
    expect(FAILING_KINDS).not.toContain('latency');
    expect(FAILING_KINDS).not.toContain('trickle');
    const plan = faultPlan({ seed: 9, rate: 1 });
    for (let n = 1; n <= 300; n++) plan(ctx(n));
    const slow = plan.injected.latency + plan.injected.trickle;
    expect(plan.failures + slow).toBe(300);
    expect(slow).toBeGreaterThan(0);
  });

  it('rejects bad options naming the option', () => {
    const bad: [unknown, RegExp][] = [
      [{}, /faultPlan\.seed/],
      [{ seed: -1 }, /faultPlan\.seed/],
      [{ seed: 1, rate: 1.5 }, /faultPlan\.rate/],
      [{ seed: 1, rate: Number.NaN }, /faultPlan\.rate/],
      [{ seed: 1, kinds: [] }, /faultPlan\.kinds/],
      [{ seed: 1, kinds: ['404'] }, /faultPlan\.kinds\[0\]/],
      [{ seed: 1, at: { 0: 'reset' } }, /faultPlan\.at\[0\]/],
      [{ seed: 1, at: { 1: 'explode' } }, /faultPlan\.at\[1\]/],
      [{ seed: 1, latencyMs: -5 }, /faultPlan\.latencyMs/],
      [{ seed: 1, retryAfter: 'a\nb' }, /faultPlan\.retryAfter/],
      [{ seed: 1, only: 'GET' }, /faultPlan\.only/],
    ];
    for (const [options, message] of bad) {
      expect(() => faultPlan(options as never)).toThrow(InvalidArgumentError);
      expect(() => faultPlan(options as never)).toThrow(message);
    }
  });

  it('on the wire: 429 carries Retry-After, latency delays, trickle and cut still send the real headers', async () => {
    const plan = faultPlan({
      seed: 1,
      rate: 0,
      retryAfter: '3',
      latencyMs: 300,
      at: { 1: '429', 2: '504', 3: 'latency', 4: 'trickle', 5: 'cut', 6: 'reset' },
    });
    const { emu } = await setup({ fault: plan });
    const headers = { Authorization: `token ${emu.apiKey}` };
    const get = () => fetch(`${emu.url}/datasets/`, { headers });
    const r1 = await get();
    expect([r1.status, r1.headers.get('retry-after'), await r1.json()]).toEqual([
      429,
      '3',
      { message: 'injected fault: 429' },
    ]);
    expect((await get()).status).toBe(504);
    const t0 = performance.now();
    const delayed = plan.decide(ctx(3))!.fault as { ms: number };
    expect((await get()).status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(delayed.ms - 5);
    expect(((await (await get()).json()) as { datasets: unknown[] }).datasets).toHaveLength(4);
    const cut = await get();
    expect(cut.status).toBe(200);
    await expect(cut.text()).rejects.toThrow();
    await expect(get()).rejects.toThrow();
    expect((await get()).status).toBe(200);
    expect(plan.failures).toBe(4);
  });
});
