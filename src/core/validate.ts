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

/** An integer from `min` to `max` (inclusive): "an integer >= 1", "an integer from 0 to 65535". */
export function checkInteger(
  value: unknown,
  argument: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw invalid(argument, `an integer ${range}`, value);
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
