/**
 * Bodies that are not UTF-8. `Buffer#toString('utf8')` and csv-parse turn every byte that is not part of
 * a well-formed sequence into U+FFFD without a word, so a value would reach the user changed. The
 * reference decoders check first and fail with a `DecodeError` that says where (`invalidUtf8: 'error'`,
 * the default), or keep the replacement characters when the caller asked for them (`'replace'`).
 * The fast decoders never see such a body: they decline any page that is not UTF-8 (`isUtf8`).
 */
import { isUtf8 } from 'node:buffer';
import { DecodeError, type PageRef } from '../core/errors.js';

/** What a reference decoder does with bytes that are not UTF-8. */
export type InvalidUtf8 = 'error' | 'replace';

/** The length of the sequence a lead byte starts, or 0 for a byte that cannot start one. */
function sequenceLength(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

/** Whether `b[i+1]` may follow `lead` as its first continuation byte (no overlong, surrogate, > U+10FFFF). */
function secondOk(lead: number, second: number): boolean {
  if (lead === 0xe0) return second >= 0xa0 && second <= 0xbf;
  if (lead === 0xed) return second >= 0x80 && second <= 0x9f;
  if (lead === 0xf0) return second >= 0x90 && second <= 0xbf;
  if (lead === 0xf4) return second >= 0x80 && second <= 0x8f;
  return second >= 0x80 && second <= 0xbf;
}

/**
 * Where the bytes stop being UTF-8: `{ invalid }`, the offset of the first byte of a malformed sequence;
 * `{ incomplete }`, the offset of a sequence cut by the end of `b` (whole if more bytes follow); or
 * `undefined` when all of `b` is well-formed.
 */
export function findInvalidUtf8(b: Uint8Array): { invalid: number } | { incomplete: number } | undefined {
  if (isUtf8(b)) return undefined;
  let i = 0;
  while (i < b.length) {
    const lead = b[i]!;
    const n = sequenceLength(lead);
    if (n === 0) return { invalid: i };
    for (let k = 1; k < n; k++) {
      if (i + k >= b.length) return { incomplete: i };
      const c = b[i + k]!;
      if (k === 1 ? !secondOk(lead, c) : c < 0x80 || c > 0xbf) return { invalid: i };
    }
    i += n;
  }
  return undefined;
}

function hexAround(b: Uint8Array, at: number): string {
  return Array.from(b.subarray(at, Math.min(b.length, at + 4)), (x) => x.toString(16).padStart(2, '0')).join(
    ' ',
  );
}

/**
 * The error for the malformed bytes at `b[at]`, byte `base + at` of the body, with the row and column
 * where known.
 */
export function invalidUtf8Error(
  b: Uint8Array,
  at: number,
  where: PageRef,
  options: { base?: number; cell?: { row: number; column: string } | undefined } = {},
): DecodeError {
  return new DecodeError(
    `The body is not UTF-8: bytes ${hexAround(b, at)} at byte ${(options.base ?? 0) + at} (pass invalidUtf8: 'replace' to read them as U+FFFD)`,
    { page: where, ...options.cell },
  );
}

/**
 * A body's chunks as they are, once each is checked to continue well-formed UTF-8 (a sequence may be
 * split between chunks); throws the located error at the first malformed byte.
 */
export async function* checkedUtf8(
  chunks: AsyncIterable<Uint8Array | string>,
  where: PageRef,
): AsyncGenerator<Uint8Array | string> {
  let offset = 0; // body offset of `carry`'s first byte, or of the chunk's when there is no carry
  let carry: Uint8Array | undefined;
  for await (const chunk of chunks) {
    if (typeof chunk === 'string') {
      yield chunk;
      continue;
    }
    const bytes = carry ? Buffer.concat([carry, chunk]) : chunk;
    const found = findInvalidUtf8(bytes);
    if (found && 'invalid' in found) throw invalidUtf8Error(bytes, found.invalid, where, { base: offset });
    const whole = found ? found.incomplete : bytes.length;
    carry = found ? bytes.slice(whole) : undefined;
    offset += whole;
    yield chunk;
  }
  // The body ended inside a sequence.
  if (carry) throw invalidUtf8Error(carry, 0, where, { base: offset });
}
