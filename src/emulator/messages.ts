/** Bounded descriptions of client input for error messages: echoed text never exceeds ~100 chars. */

const MAX_ECHO = 100;

/** `text` cut to 100 characters, with an ellipsis when cut. */
export function capText(text: string): string {
  return text.length > MAX_ECHO ? `${text.slice(0, MAX_ECHO - 1)}…` : text;
}

/** A quoted, capped echo of a string the client sent. */
export function quote(text: string): string {
  return JSON.stringify(capText(text));
}

/** `"text"`, `42 (number)`, `array`, `null`: what a value is, short enough for a message. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'number':
    case 'boolean':
      return `${String(value)} (${typeof value})`;
    case 'object':
      return 'object';
    default:
      return typeof value;
  }
}
