/**
 * The number rule, in one place: what a decimal literal is worth, whatever its spelling (`9007199254740993`,
 * `9007199254740993.0`, `9.007199254740993e15`, `90071992547409930e-1`, `1e0005`), for every wire format.
 *
 * - A double keeps a literal when every significant digit the literal carries survives: the double,
 *   rounded to as many significant digits, gives the literal's value back. Leading zeros and the trailing
 *   zeros of a fraction carry nothing; every other digit does, the trailing zeros of an integer included
 *   (`12345678901234567000` is refused: its double is ...7168). So `0.1`, `1.5e300` and a 17-digit `%.17g`
 *   spelling are kept; an integer past 2^53 that a double would round, `1e400` and `1e-400` are not.
 * - A literal's wire value (what the reference decoders hand the converters) is its double when the literal
 *   is that double's own spelling (`String(d)`) within ±2^53, else its text: the text then decides in
 *   every mode (`bigNumbers: 'string'` keeps it as sent, `'bigint'` reads its integer exactly).
 *
 * The table-JSON byte scanner decides the common case itself (up to 15 digits and 10^±22, exact by
 * arithmetic) and asks `keepsDigits` for the rest; CSV, XLSX and the reference come here through `toNumber`.
 */

const TWO_POW_53 = 9_007_199_254_740_992;

/** A decimal's value as `digits × 10^scale`: `digits` without leading or trailing zeros (`''`: zero). */
interface Decimal {
  readonly negative: boolean;
  readonly digits: string;
  readonly scale: number;
  /** Significant digits the text carried (a fraction's trailing zeros not counted). */
  readonly carried: number;
}

/** The decimal value of `s` (`[+-]digits[.digits][e[+-]digits]`, either part may be empty), or undefined. */
function decimal(s: string): Decimal | undefined {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(s);
  if (m === null || (m[2] === '' && (m[3] ?? '') === '')) return undefined;
  const whole = m[2]!;
  const fraction = (m[3] ?? '').replace(/0+$/, '');
  const exponent = m[4] === undefined ? 0 : Number(m[4]);
  let all = (whole + fraction).replace(/^0+/, '');
  const carried = all.length;
  let scale = exponent - fraction.length;
  const trimmed = all.replace(/0+$/, '');
  scale += all.length - trimmed.length;
  all = trimmed;
  return { negative: m[1] === '-', digits: all, scale: all === '' ? 0 : scale, carried };
}

/**
 * Whether double `d`, read from decimal literal `s`, keeps every significant digit `s` carries (see the
 * module comment). `d` must be `s` read as a double (`+s`, or `JSON.parse`'s reading of it).
 */
export function keepsDigits(s: string, d: number): boolean {
  const t = decimal(s);
  if (t === undefined) return false;
  if (t.digits === '') return d === 0;
  if (d === 0 || !Number.isFinite(d)) return false;
  const n = t.carried;
  const back = decimal(n <= 100 ? Math.abs(d).toPrecision(n) : roundedDigits(Math.abs(d), n))!;
  return back.digits === t.digits && back.scale === t.scale;
}

/** Positive double `d` exactly, rounded half up to `n` significant digits, as `<digits>e<scale>`. */
function roundedDigits(d: number, n: number): string {
  const bits = new DataView(new ArrayBuffer(8));
  bits.setFloat64(0, d);
  const raw = bits.getBigUint64(0);
  const biased = Number((raw >> 52n) & 0x7ffn);
  const fraction = raw & ((1n << 52n) - 1n);
  const m = biased === 0 ? fraction : fraction | (1n << 52n);
  const k = (biased === 0 ? 1 : biased) - 1075; // d = m × 2^k
  let digits = (k >= 0 ? m << BigInt(k) : m * 5n ** BigInt(-k)).toString();
  let scale = Math.min(k, 0);
  if (digits.length > n) {
    const up = digits.charCodeAt(n) >= 0x35;
    scale += digits.length - n;
    digits = (BigInt(digits.slice(0, n)) + (up ? 1n : 0n)).toString();
  }
  return `${digits}e${scale}`;
}

/**
 * What the reference decoders hand the converters for number literal `text` (a JSON number, a CSV field
 * of a `number` column, an XLSX numeric cell): its double when `text` is that double's own spelling
 * within ±2^53, else the text itself (which the converters read by the rule above, and reject when it
 * is no decimal literal).
 */
export function numberWire(text: string, d: number = +text): number | string {
  return d - d === 0 && d >= -TWO_POW_53 && d <= TWO_POW_53 && String(d) === text ? d : text;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** The integer decimal text `s` spells, in any spelling (`1e3`, `12.0`), if it is one within Int64. */
export function exactInteger(s: string): bigint | undefined {
  const t = decimal(s);
  if (t === undefined || t.scale < 0) return undefined;
  if (t.digits === '') return 0n;
  if (t.digits.length + t.scale > 19) return undefined;
  const x = BigInt(t.digits) * 10n ** BigInt(t.scale) * (t.negative ? -1n : 1n);
  return x >= INT64_MIN && x <= INT64_MAX ? x : undefined;
}
