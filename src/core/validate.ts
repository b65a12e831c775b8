/**
 * The checking kit: every option and argument check of the library goes through these, so a typo costs
 * an `InvalidArgumentError` naming the argument, before anything is sent, with one message shape:
 * ``Expected `name` to be …, got … (type)``.
 */
import { InvalidArgumentError, safeRepr } from './errors.js';

/** A value as messages show it: its (short, JSON-ish) representation and its type. */
export function describeValue(value: unknown): string {
  return `${safeRepr(value)} (${value === null ? 'null' : typeof value})`;
}

/** The error for `value` not being `what` (a phrase such as "an integer >= 1"). */
export function invalid(argument: string, what: string, value: unknown, hint = ''): InvalidArgumentError {
  return new InvalidArgumentError(
    argument,
    `Expected \`${argument}\` to be ${what}, got ${describeValue(value)}${hint}`,
  );
}

/** A range as messages say it: ">= 1" when `max` is the type's own bound, else "from 0 to 65535". */
function range(min: number, max: number, unbounded: number): string {
  return max === unbounded ? `>= ${min}` : `from ${min} to ${max}`;
}

/** An integer from `min` to `max` (inclusive): "an integer >= 1", "an integer from 0 to 65535". */
export function checkInteger(
  value: unknown,
  argument: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(argument, `an integer ${range(min, max, Number.MAX_SAFE_INTEGER)}`, value);
  }
  return value;
}

/** `checkInteger`, or `fallback` when the option is not given. */
export function optionalInteger(
  value: unknown,
  argument: string,
  min: number,
  fallback: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  return value === undefined ? fallback : checkInteger(value, argument, min, max);
}

/** One of a few strings, or `fallback` when the option is not given. */
export function oneOf<T extends string>(
  value: unknown,
  argument: string,
  allowed: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T)) {
    throw invalid(argument, `one of ${allowed.map((a) => `'${a}'`).join(', ')}`, value);
  }
  return value as T;
}

/** A string of at most `maxLength` characters. */
export function checkString(value: unknown, argument: string, maxLength = 1000): string {
  if (typeof value !== 'string' || value.length > maxLength) {
    throw invalid(argument, `a string of at most ${maxLength} characters`, value);
  }
  return value;
}

/** An `AbortSignal`, or `undefined`. */
export function checkSignal(value: unknown, argument = 'signal'): AbortSignal | undefined {
  if (value !== undefined && !(value instanceof AbortSignal))
    throw invalid(argument, 'an AbortSignal', value);
  return value;
}

/** A finite number from `min` to `max` (inclusive): "a finite number >= 0", "a finite number from 0 to 1". */
export function checkNumber(
  value: unknown,
  argument: string,
  min: number,
  max = Number.POSITIVE_INFINITY,
): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw invalid(argument, `a finite number ${range(min, max, Number.POSITIVE_INFINITY)}`, value);
  }
  return value;
}

/** `true` or `false`, or `fallback` when the option is not given. */
export function optionalBoolean(value: unknown, argument: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalid(argument, 'a boolean', value);
  return value;
}

/** An object that is not `null` nor an array (an options bag, a query body). */
export function checkObject<T>(value: T, argument: string, what = 'an object'): T & object {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(argument, what, value);
  return value;
}

/** An array with at least one element. */
export function checkNonEmptyArray(value: unknown, argument: string): unknown[] {
  if (!Array.isArray(value) || value.length === 0) throw invalid(argument, 'a non-empty array', value);
  return value;
}

/**
 * The error for `value` not being `what`, where the value may be a secret (an API key, a token passed
 * where a function was expected): the message says its type and never shows it.
 */
export function invalidSecret(argument: string, what: string, value: unknown): InvalidArgumentError {
  const type = value === null ? 'null' : typeof value;
  return new InvalidArgumentError(
    argument,
    `Expected \`${argument}\` to be ${what}, got a value not shown (${type})`,
  );
}

/**
 * The option names of `T`, each given as `true`: the compiler fails when `T` gains an option the list
 * lacks or the list names one `T` does not have, so a check of unknown keys cannot fall behind the type.
 *
 * @example const KNOWN = optionKeys<CsvOptions>({ header: true, nullText: true });
 */
export function optionKeys<T extends object>(
  keys: { readonly [K in keyof Required<T>]: true },
): ReadonlySet<string> {
  return new Set(Object.keys(keys));
}

/**
 * Refuses every key of `options` that is not in `known` (a typo such as `pagesize` would otherwise be
 * ignored silently: the option left at its default), naming the closest known one. `where` says whose
 * options they are ("`client.stream()` options"); `prefix` is the path of nested options (`retry.`).
 */
export function checkKeys(options: object, known: ReadonlySet<string>, where: string, prefix = ''): void {
  for (const key of Object.keys(options)) {
    if (known.has(key)) continue;
    const near = closest(key, known);
    throw new InvalidArgumentError(
      `${prefix}${key}`,
      near === undefined
        ? `not one of the ${where} (${[...known].map((k) => `\`${k}\``).join(', ')})`
        : `did you mean \`${prefix}${near}\`? (not one of the ${where})`,
    );
  }
}

/** The known name nearest to `key` (ignoring case), when it is near enough to be what was meant. */
export function closest(key: string, known: Iterable<string>): string | undefined {
  const typed = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(typed.length / 3)) + 1;
  for (const name of known) {
    const d = editDistance(typed, name.toLowerCase());
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}

/** Edits (insert, delete, replace, swap of neighbours) from `a` to `b`: optimal string alignment. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}
