/**
 * Making text from elsewhere (the server) safe to print on a terminal: C0 and C1 control characters
 * (ESC starts the sequences that retitle a window, clear the screen or move the cursor), DEL, and the
 * bidirectional formatting characters (U+202E turns the rest of a line around) become visible escapes,
 * `\x1b` or `\u202e`; a backslash becomes `\\`, so an escape cannot be forged. Every other character,
 * any script, passes as it is.
 */

// C0 (incl. TAB, CR, LF), DEL, C1, ALM, LRM/RLM, LRE..RLO, LRI..PDI.
const UNSAFE = /[\\\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_TEST = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

function escapeOne(c: string): string {
  if (c === '\\') return '\\\\';
  const code = c.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** `text` with every control and bidi character escaped (see above); unchanged when it has none. */
export function escapeControls(text: string): string {
  // Backslashes are escaped only when something else is: plain text (Windows paths) prints as it is.
  return UNSAFE_TEST.test(text) ? text.replace(UNSAFE, escapeOne) : text;
}
