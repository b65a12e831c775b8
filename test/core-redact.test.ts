/**
 * core/redact: the key is masked wherever a text holds it, whatever stands around or inside it (issue 28:
 * an ANSI colour code right before it let it through, since the mask wanted a non-letter neighbour).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MASK, redactSecrets, registerSecret } from '../src/core/redact.js';

const HEX_KEY = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
registerSecret(HEX_KEY);

/** The key's characters with `gaps[i]` inserted before character i (where given). */
function split(key: string, gaps: Map<number, string>): string {
  let out = '';
  for (let i = 0; i < key.length; i++) out += (gaps.get(i) ?? '') + key[i];
  return out;
}

const CONTROL_SEQUENCES = [
  '\u001b[31m',
  '\u001b[0m',
  '\u001b[1;32m',
  '\u0007',
  '\r',
  '\\x1b[31m',
  '\\u001b[0m',
  '\\x07',
];

describe('redactSecrets', () => {
  it('masks the key right after an ANSI colour code (a letter before it), in a message and raw', () => {
    const text = `forbidden for \u001b[31m${HEX_KEY}\u001b[0m`;
    expect(redactSecrets(text)).toBe(`forbidden for \u001b[31m${MASK}\u001b[0m`);
    expect(redactSecrets(`key=a${HEX_KEY}z`)).not.toContain(HEX_KEY.slice(8));
  });

  it('masks the key in any case of its hex digits', () => {
    expect(redactSecrets(`KEY ${HEX_KEY.toUpperCase()}`)).toBe(`KEY ${MASK}`);
  });

  it('masks the key split by control sequences, raw or escaped', () => {
    const text = `echo: ${split(
      HEX_KEY,
      new Map([
        [3, '\u001b[31m'],
        [20, '\\x1b[0m'],
        [40, '\r'],
      ]),
    )}!`;
    const out = redactSecrets(text);
    expect(out).toBe(`echo: ${MASK}!`);
  });

  it('masks the key in base64, alone or inside a longer base64 text at any alignment', () => {
    for (const prefix of ['', 'u', 'us', 'user:']) {
      const b64 = Buffer.from(`${prefix}${HEX_KEY}:tail`).toString('base64');
      const out = redactSecrets(`Authorization: Basic ${b64}`);
      expect(out).toContain(MASK);
      // What is left of the base64 cannot give the key back.
      const left = out
        .split(MASK)
        .map((part) => Buffer.from(part.replace(/^.*Basic /, ''), 'base64').toString('latin1'));
      for (const part of left) expect(part).not.toContain(HEX_KEY.slice(0, 12));
    }
    // At most the last character is left: 4 bits of the key's last byte, shared with whatever follows.
    expect(redactSecrets(Buffer.from(HEX_KEY).toString('base64url'))).toMatch(/^\*\*\*.?$/);
  });

  it('leaves a short key masked only as a whole token (a test key `k` does not mangle words)', () => {
    expect(redactSecrets('look, k is the key', ['k'])).toBe(`look, ${MASK} is the key`);
  });

  it('property: any neighbours, any case, any control sequences inside: the key never survives', () => {
    const keyChar = fc.constantFrom(...'0123456789abcdef');
    fc.assert(
      fc.property(
        fc.array(keyChar, { minLength: 16, maxLength: 48 }).map((cs) => cs.join('')),
        fc.string({ maxLength: 6 }),
        fc.string({ maxLength: 6 }),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom(...CONTROL_SEQUENCES)), { maxLength: 4 }),
        fc.boolean(),
        (key, before, after, gapList, upper) => {
          const gaps = new Map(gapList.map(([at, seq]) => [at % key.length, seq]));
          const shown = upper ? key.toUpperCase() : key;
          const out = redactSecrets(`${before}${split(shown, gaps)}${after}`, [key]);
          const visible = out.replace(
            /\u001b\[[0-9;]*m|\\x1b\[[0-9;]*m|\\u001b\[[0-9;]*m|[\u0000-\u001f]|\\x07/g,
            '',
          );
          expect(visible.toLowerCase()).not.toContain(key.slice(2, -2));
          expect(out).toContain(MASK);
        },
      ),
      { numRuns: 200 },
    );
  });
});
