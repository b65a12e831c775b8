/**
 * The one scanner of table-JSON bytes: white space, strings (plain runs four bytes at a time, escapes
 * decoded into UTF-8), numbers (their double exactly as `JSON.parse` reads it, and whether it keeps every
 * digit: convert/numbers.ts), literals, any value skipped as strictly as `JSON.parse`, and a framer that
 * finds where a unit of a page (a member, a row) ends without reading it. Every reader of table JSON sits
 * on it: the envelope, the row loop and the column kinds (kinds/), the reference's number walk.
 *
 * Whatever is not ordinary is declined by throwing `BAIL`: the page then goes to the reference, which
 * gives the same result or the right error.
 */

import { keepsDigits, numberWire } from '../convert/numbers.js';
import { InvalidValueError } from '../core/errors.js';

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;

/** What `Scan.value()` read. */
export const NULL = 0;
export const FALSE = 1;
export const TRUE = 2;
export const NUMBER = 3;
export const STRING = 4;

const TWO_POW_53 = 9_007_199_254_740_992;
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);
/** The byte each one-letter escape stands for (`\n`: 0x0a), -1 for the letters that are none. */
const ESCAPED = Int16Array.from({ length: 128 }, (_, c) =>
  c === 0x22 || c === 0x5c || c === 0x2f
    ? c
    : (({ 98: 0x08, 102: 0x0c, 110: 0x0a, 114: 0x0d, 116: 0x09 } as Record<number, number>)[c] ?? -1),
);
/** Nesting a skipped value may have (the reference, `JSON.parse`, reads any: a deeper page is declined). */
const MAX_DEPTH = 512;

/** Thrown to leave a page to the reference; never escapes a decoder. */
export class Decline extends Error {}
export const BAIL = new Decline('not an ordinary page');

/**
 * Whether a decoder's error means "not an ordinary page": a decline, the `InvalidValueError` of a value a
 * row cell reads through the reference (which then reports it, with its place), or the
 * `RangeError`/`SyntaxError` a `JSON.parse` of a slice or a buffer's growth may throw on a hostile page.
 */
export function isDecline(error: unknown): boolean {
  return (
    error instanceof Decline ||
    error instanceof InvalidValueError ||
    error instanceof RangeError ||
    error instanceof SyntaxError
  );
}

/** Buffer's own slicers (what `toString` calls once it has checked its arguments). */
type Slicing = Buffer & {
  utf8Slice(start: number, end: number): string;
  latin1Slice(start: number, end: number): string;
};

/** `b[start, end)` as UTF-8 text. */
export function utf8(b: Buffer, start: number, end: number): string {
  return (b as Slicing).utf8Slice(start, end);
}

/** `b[start, end)` as Latin-1 text (a number literal's ASCII). */
export function latin1(b: Buffer, start: number, end: number): string {
  return (b as Slicing).latin1Slice(start, end);
}

export function isWs(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export function skipWs(b: Uint8Array, i: number): number {
  while (isWs(b[i])) i++;
  return i;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

/**
 * The bytes of little-endian word `v` that are a quote, a backslash or a control character, as a mask with
 * each such byte's high bit set (SWAR: a byte's high bit survives `(x - 0x01) & ~x` only when x was 0). The
 * lowest flagged byte is always a real one (false alarms only sit above it, from the borrow).
 */
function specialBytes(v: number): number {
  const q = v ^ 0x22222222;
  const e = v ^ 0x5c5c5c5c;
  return (((q - 0x01010101) & ~q) | ((e - 0x01010101) & ~e) | ((v - 0x20202020) & ~v)) & 0x80808080;
}

/** The index of the first quote, backslash or control byte of `b` from `i` (`b.length` if none). */
export function plainEnd(b: Uint8Array, view: DataView, i: number): number {
  const n = b.length;
  while (i + 4 <= n) {
    const special = specialBytes(view.getInt32(i, true));
    if (special !== 0) return i + ((31 - Math.clz32(special & -special)) >> 3);
    i += 4;
  }
  for (; i < n; i++) {
    const c = b[i]!;
    if (c === QUOTE || c === BACKSLASH || c < 0x20) return i;
  }
  return n;
}

function hexValue(c: number | undefined): number {
  if (c === undefined) return -1;
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x61 + 10 : -1;
}

function hex4(b: Uint8Array, i: number): number {
  const v =
    (hexValue(b[i]) << 12) | (hexValue(b[i + 1]) << 8) | (hexValue(b[i + 2]) << 4) | hexValue(b[i + 3]);
  return v < 0 ? -1 : v;
}

/** Where `Scan.stringInto` writes a string: bytes that can be made room in, and the end written so far. */
export interface Into {
  bytes: Uint8Array;
  view: DataView;
  pos: number;
  /**
   * Room for `need` bytes, the first `pos` kept (`bytes` and `view` then new); `rest`: the bytes in hand
   * still to scan, a bound on the string's own (a huge string whole in hand is given its room at once).
   */
  room(need: number, rest: number): void;
}

/** A buffer strings with escapes are decoded into, reused (the strings are made or copied from it). */
class Scratch implements Into {
  bytes: Buffer = Buffer.allocUnsafeSlow(4096);
  view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  pos = 0;

  room(need: number): void {
    const next = Buffer.allocUnsafeSlow(Math.max(need, 2 * this.bytes.length));
    next.set(this.bytes.subarray(0, this.pos));
    this.bytes = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }
}

/**
 * A cursor over the bytes in hand and the last value it read. One per decode: nothing here is shared
 * between pages or streams, so decodes that take turns never see each other's values.
 */
export class Scan {
  b: Buffer = Buffer.alloc(0);
  view: DataView = new DataView(new ArrayBuffer(0));
  /** The byte read next. */
  i = 0;
  /** Where the row being read started (the row loop goes back to it when the bytes end inside it). */
  mark = 0;
  /**
   * The last string's UTF-8 bytes (`text[start, end)`: in `b`, or in the scratch buffer when it had
   * escapes), or the last number's literal (in `b`).
   */
  text: Buffer = this.b;
  start = 0;
  end = 0;
  /** The last number's double, or NaN when it does not keep every digit of its literal (numbers.ts). */
  num = 0;
  /**
   * Whether the last string read by `string()` had a lone surrogate escape (written as U+FFFD, as
   * `Buffer#write` does).
   */
  lone = false;
  /** Lone surrogates met since the decode began (a false alarm in a row cut short included). */
  lones = 0;
  /** Where the last string's opening quote is in `b`. */
  quoteAt = 0;
  readonly #scratch = new Scratch();

  /** Reads from `b` (its first byte at `i`). */
  at(b: Buffer, i: number): void {
    this.b = b;
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    this.i = i;
  }

  /** Skips white space; the byte after it. */
  ws(): number | undefined {
    const b = this.b;
    let i = this.i;
    // A run of spaces (indentation, padding) four bytes at a time.
    if (b[i] === 0x20 && b[i + 1] === 0x20) {
      const view = this.view;
      while (i + 4 <= b.length && view.getInt32(i, true) === 0x20202020) i += 4;
    }
    while (isWs(b[i])) i++;
    this.i = i;
    return b[i];
  }

  /** The scalar at `i`: its kind, and its bytes or value in the fields above. Arrays and objects decline. */
  value(): number {
    const c = this.b[this.i];
    if (c === QUOTE) {
      this.string();
      return STRING;
    }
    if (c === 0x2d || isDigit(c)) {
      this.number();
      return NUMBER;
    }
    return this.keyword();
  }

  /** What `JSON.parse` (and the reference's number rule) makes of the value `value()` just read. */
  wire(kind: number): string | number | boolean | null {
    if (kind === STRING) return this.str();
    if (kind === NUMBER) return numberWire(latin1(this.b, this.start, this.end));
    return kind === NULL ? null : kind === TRUE;
  }

  /** The last string as `JSON.parse` makes it (a lone surrogate stays itself). */
  str(): string {
    if (!this.lone) return utf8(this.text, this.start, this.end);
    return JSON.parse(utf8(this.b, this.quoteAt, this.i)) as string;
  }

  /** `true`, `false` or `null` at `i`. */
  keyword(): number {
    const b = this.b;
    const i = this.i;
    const c = b[i];
    if (c === 0x74 && b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65) {
      this.i = i + 4;
      return TRUE;
    }
    if (c === 0x66 && b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x73 && b[i + 4] === 0x65) {
      this.i = i + 5;
      return FALSE;
    }
    if (c === 0x6e && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c) {
      this.i = i + 4;
      return NULL;
    }
    throw BAIL;
  }

  /** The string whose opening quote is at `i`; declines a malformed one (or one cut by the bytes' end). */
  string(): void {
    const b = this.b;
    const start = this.i + 1;
    const e = plainEnd(b, this.view, start);
    this.quoteAt = this.i;
    this.lone = false;
    if (b[e] !== QUOTE) {
      // Escapes: decoded into the scratch buffer.
      const scratch = this.#scratch;
      scratch.pos = 0;
      this.stringInto(scratch);
      this.text = scratch.bytes;
      this.start = 0;
      this.end = scratch.pos;
      return;
    }
    this.text = b;
    this.start = start;
    this.end = e;
    this.i = e + 1;
  }

  /**
   * The string whose opening quote is at `i`, its UTF-8 bytes (escapes decoded) written into `into` from
   * `into.pos` as it is scanned (`into.pos` then after them): plain bytes four at a time, and at a quote
   * or backslash the bytes before it in the word are kept, not read again. No escape decodes to more
   * bytes than it takes, so while `i < stop` there is room for the next byte; an escape makes room for 4.
   */
  stringInto(into: Into): void {
    const b = this.b;
    const n = b.length;
    const view = this.view;
    let i = this.i + 1;
    let o = into.pos;
    let out = into.bytes;
    let outView = into.view;
    let stop = Math.min(n, i + (out.length - o));
    for (;;) {
      while (i + 4 <= stop) {
        const v = view.getInt32(i, true);
        outView.setInt32(o, v, true);
        const special = specialBytes(v);
        if (special !== 0) {
          const k = (31 - Math.clz32(special & -special)) >> 3;
          i += k;
          o += k;
          break;
        }
        i += 4;
        o += 4;
      }
      if (i >= stop || o + 4 > out.length) {
        if (i >= n) throw BAIL; // cut by the end of the bytes in hand
        into.pos = o;
        into.room(o + 4096, n - i);
        out = into.bytes;
        outView = into.view;
        stop = Math.min(n, i + (out.length - o));
      }
      const c = b[i]!;
      if (c === QUOTE) break;
      if (c === BACKSLASH) {
        const x = b[i + 1];
        if (x === 0x75) {
          const from = o;
          o = this.#unicode(i, out, o);
          i += o - from === 4 ? 12 : 6;
        } else {
          const byte = x === undefined ? -1 : ESCAPED[x]!;
          if (!(byte >= 0)) throw BAIL;
          out[o++] = byte;
          i += 2;
        }
      } else if (c < 0x20) throw BAIL;
      else {
        out[o++] = c;
        i++;
      }
    }
    into.pos = o;
    this.i = i + 1;
  }

  /**
   * The `\uXXXX` escape at `b[i]` (with a low surrogate escape after a high one) into `out` at `o`, as
   * `Buffer#write` encodes the string `JSON.parse` makes (a lone surrogate as U+FFFD); the new end.
   */
  #unicode(i: number, out: Uint8Array, o: number): number {
    const b = this.b;
    let u = hex4(b, i + 2);
    if (u < 0) throw BAIL;
    if (u >= 0xd800 && u <= 0xdbff && b[i + 6] === BACKSLASH && b[i + 7] === 0x75) {
      const lo = hex4(b, i + 8);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
        out[o++] = 0xf0 | (u >> 18);
        out[o++] = 0x80 | ((u >> 12) & 0x3f);
        out[o++] = 0x80 | ((u >> 6) & 0x3f);
        out[o++] = 0x80 | (u & 0x3f);
        return o;
      }
    }
    if (u >= 0xd800 && u <= 0xdfff) {
      this.lone = true;
      this.lones++;
      u = 0xfffd;
    }
    if (u < 0x80) out[o++] = u;
    else if (u < 0x800) {
      out[o++] = 0xc0 | (u >> 6);
      out[o++] = 0x80 | (u & 0x3f);
    } else {
      out[o++] = 0xe0 | (u >> 12);
      out[o++] = 0x80 | ((u >> 6) & 0x3f);
      out[o++] = 0x80 | (u & 0x3f);
    }
    return o;
  }

  /**
   * The number at `i` (strict JSON grammar): `num` is its double as `JSON.parse` reads it, or NaN when
   * that double loses a digit of the literal (numbers.ts); the literal is `b[start, end)`.
   */
  number(): void {
    const b = this.b;
    let i = this.i;
    const s = i;
    const neg = b[i] === 0x2d;
    if (neg) i++;
    let c = b[i];
    let m = 0;
    let digits = 0;
    if (c === 0x30) {
      c = b[++i];
      if (isDigit(c)) throw BAIL; // a leading zero
    } else if (c !== undefined && c >= 0x31 && c <= 0x39) {
      do {
        m = m * 10 + (c - 0x30);
        digits++;
        c = b[++i];
      } while (c !== undefined && c >= 0x30 && c <= 0x39);
    } else throw BAIL;
    let scale = 0;
    if (c === 0x2e) {
      c = b[++i];
      if (!isDigit(c)) throw BAIL;
      do {
        m = m * 10 + (c! - 0x30);
        digits++;
        scale--;
        c = b[++i];
      } while (c !== undefined && c >= 0x30 && c <= 0x39);
    }
    if (c === 0x65 || c === 0x45) {
      c = b[++i];
      let eneg = false;
      if (c === 0x2b || c === 0x2d) {
        eneg = c === 0x2d;
        c = b[++i];
      }
      if (!isDigit(c)) throw BAIL;
      let e = 0;
      do {
        if (e < 100_000) e = e * 10 + (c! - 0x30);
        c = b[++i];
      } while (c !== undefined && c >= 0x30 && c <= 0x39);
      scale += eneg ? -e : e;
    }
    this.start = s;
    this.end = i;
    this.i = i;
    let v: number;
    if (digits <= 15 && scale >= -22 && scale <= 22) {
      // Exact operands and one correctly rounded operation: `JSON.parse`'s double, and with at most 15
      // digits every one of them survives it.
      v = scale === 0 ? m : scale > 0 ? m * POW10[scale]! : m / POW10[-scale]!;
      if (neg) v = -v;
    } else if (scale === 0 && m < TWO_POW_53) {
      // Below 2^53 every step of `m` was exact (and a rounded `m` of 2^53 or more means the literal is).
      v = neg ? -m : m;
    } else {
      const text = latin1(b, s, i);
      v = +text;
      if (!keepsDigits(text, v)) v = Number.NaN;
    }
    this.num = v;
  }

  /** Skips any value at `i`, checking it as strictly as `JSON.parse`. */
  skip(depth = 0): void {
    const b = this.b;
    const open = b[this.i];
    if (open !== OPEN_ARRAY && open !== OPEN_OBJECT) {
      this.value();
      return;
    }
    if (depth >= MAX_DEPTH) throw BAIL;
    const close = open + 2; // `]` and `}` follow their openers by two
    this.i++;
    if (this.ws() === close) {
      this.i++;
      return;
    }
    for (;;) {
      if (open === OPEN_OBJECT) {
        if (b[this.i] !== QUOTE) throw BAIL;
        this.string();
        if (this.ws() !== COLON) throw BAIL;
        this.i++;
        this.ws();
      }
      this.skip(depth + 1);
      const c = this.ws();
      this.i++;
      if (c === close) return;
      if (c !== COMMA) throw BAIL;
      this.ws();
    }
  }
}

/**
 * Where a unit of a page ends, found a chunk at a time without reading the unit (its strings, nesting
 * and escapes only): the first `,` `:` `]` or `}` outside its strings and nested values. A unit is a
 * member's name, a member's value or a row; one cut by the end of the bytes in hand is framed as more
 * come, never scanned again from its start, and decoded once it is whole.
 */
export class Framer {
  #depth = 0;
  #inString = false;

  /** Scans `b` (the unit from its start) from `i` (bytes before were framed already); its end, or -1. */
  end(b: Buffer, i: number): number {
    const n = b.length;
    let depth = this.#depth;
    for (; i < n; i++) {
      if (this.#inString) {
        // The closing quote: the next quote after an even run of backslashes (`memchr`, the string's
        // escapes not read: its decode checks them).
        let q = b.indexOf(QUOTE, i);
        while (q > 0 && escaped(b, q)) q = b.indexOf(QUOTE, q + 1);
        if (q < 0) break;
        this.#inString = false;
        i = q;
        continue;
      }
      const c = b[i];
      if (c === QUOTE) this.#inString = true;
      else if (c === OPEN_ARRAY || c === OPEN_OBJECT) depth++;
      else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
        if (depth === 0) return i;
        depth--;
      } else if ((c === COMMA || c === COLON) && depth === 0) return i;
    }
    this.#depth = depth;
    return -1;
  }
}

/** Whether the quote at `b[q]` is escaped: after an odd run of backslashes. */
function escaped(b: Uint8Array, q: number): boolean {
  let k = q - 1;
  while (b[k] === BACKSLASH) k--;
  return (q - 1 - k) % 2 === 1;
}
