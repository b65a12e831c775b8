/**
 * Integers past a double's exact range in the emulator's results (its `bigIntegers` option), written as
 * the literal digits a service would send (`9007199254740993`), never as a rounded double. Rows hold such
 * a value as a marked string (a JS number cannot hold it); each writer turns the mark into its format's
 * spelling: a bare number literal in JSON and CSV, a text cell in XLSX.
 */

/** `\u0001` never occurs in generated text, so the mark cannot be mistaken for data. */
const MARK = '\u0001int:';
/** The mark as `JSON.stringify` writes it. */
const JSON_MARKED = /"\\u0001int:(-?\d+)"/g;

/** Result rows carrying a big integer: every this many, from the first. */
export const BIG_INTEGER_EVERY = 1000;

/** The wire value standing for the integer `value` in a generated row. */
export function bigIntegerValue(value: bigint): string {
  return `${MARK}${value}`;
}

/** The big integer of the 0-based result row `offset`: 2^53 + its 1-based row number (2^53 + 1 first). */
export function bigIntegerAt(offset: number): string {
  return bigIntegerValue(2n ** 53n + BigInt(offset + 1));
}

/** The digits of a marked value, or undefined for any other value. */
export function bigIntegerDigits(value: unknown): string | undefined {
  return typeof value === 'string' && value.startsWith(MARK) ? value.slice(MARK.length) : undefined;
}

/** JSON text (of rows with marked values) with each mark made a number literal. */
export function unmarkJson(json: string): string {
  return json.includes('\\u0001int:') ? json.replace(JSON_MARKED, '$1') : json;
}
