/**
 * Keeping the API key out of every text the library keeps from the server (error messages, the server's
 * `message`, excerpts of bodies, the causes of errors). A server may echo the key back (`forbidden for
 * key …`); the README promises the key is never in an error, so errors mask it when they are made.
 *
 * The clients register their keys here (a process-wide set: a key of one client masked in an error of
 * another is harmless). A key is masked in every spelling a text may hold it in: as sent, JSON-escaped,
 * `util.inspect`-escaped, and `\xNN`/`\uNNNN`-escaped as terminal-safe text prints it (core/control-chars), so a key with a
 * `\` or a quote in it is masked after escaping too.
 */
import { inspect } from 'node:util';
import { escapeControls } from './control-chars.js';

export const MASK = '***';

// Keys rotate (a `token` provider): keep the latest ones, not every key ever seen.
const MAX_SECRETS = 64;
const secrets = new Set<string>();
// Rebuilt on the next redaction after a key is registered.
let masker: Masker | undefined;
let maskerStale = true;
/** The masker of the latest `extra` keys, with the registered ones they were combined with. */
let extraMasker: { readonly id: string; readonly masker: Masker | undefined } | undefined;

/** Registers a key to be masked from now on. Empty strings are ignored. */
export function registerSecret(secret: string | undefined): void {
  if (!secret || secrets.has(secret)) return;
  secrets.add(secret);
  if (secrets.size > MAX_SECRETS) secrets.delete(secrets.values().next().value as string);
  maskerStale = true;
}

/**
 * Keys at least this long are masked wherever they stand, whatever their neighbours (an ANSI colour code
 * such as `\x1b[31m` ends in a letter, right before the key). A shorter one only as a whole token, so that
 * a test key such as `k` does not mangle every word with a k in it; no real key is that short.
 */
const ANYWHERE_MIN = 8;

/**
 * What can stand between two characters of a key in a text without being printed as a character: raw
 * control characters and terminal sequences, and the escaped spellings of both (`\x1b[31m`, `\u001b[0m`,
 * `\x00`, `\n`). A server that splits an echoed key with colour codes must not get it past the mask.
 */
const GAP =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b[@-_]|[\u0000-\u001f\u007f-\u009f]|\\(?:x1b|u001b)\[[0-?]*[ -/]*[@-~]|\\x[0-9a-f]{2}|\\u[0-9a-f]{4}|\\[nrtbfv0]/gi;

/** The parts of base64 that only the key's bytes decide, at each of the three alignments in a longer text. */
function base64Forms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const out: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const b64 = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    const first = Math.ceil((8 * offset) / 6);
    const last = Math.floor((8 * (offset + bytes.length)) / 6);
    const core = b64.slice(first, last);
    out.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  // Whole, with its padding, as `Buffer.from(key).toString('base64')` prints it.
  out.push(bytes.toString('base64'));
  return out;
}

/** Every spelling of `secret` a text may hold. */
export function secretForms(secret: string): string[] {
  const forms = new Set([
    secret,
    JSON.stringify(secret).slice(1, -1),
    inspect(secret).slice(1, -1),
    escapeControls(secret),
    // In a text that also holds a control character, its backslashes are escaped too.
    escapeControls(`${secret}\u0000`).slice(0, -4),
    encodeURIComponent(secret),
    ...(secret.length >= ANYWHERE_MIN ? base64Forms(secret) : []),
  ]);
  return [...forms].filter((f) => f.length > 0);
}

const escapeRegex = (f: string) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Longest first, so an escaped spelling is masked whole, not only its unescaped prefix. */
function alternatives(forms: Iterable<string>): string {
  return [...new Set(forms)]
    .sort((a, b) => b.length - a.length)
    .map(escapeRegex)
    .join('|');
}

interface Masker {
  /** Every spelling, as it stands in a text. */
  readonly whole: RegExp;
  /** The long keys with any number of gaps between their characters. */
  readonly split: RegExp | undefined;
}

function maskerFor(list: Iterable<string>): Masker | undefined {
  const keys = [...new Set(list)].filter((k) => k.length > 0);
  if (keys.length === 0) return undefined;
  const longKeys = keys.filter((k) => k.length >= ANYWHERE_MIN);
  const long = longKeys.flatMap(secretForms);
  const short = keys.filter((k) => k.length < ANYWHERE_MIN).flatMap(secretForms);
  const parts: string[] = [];
  if (long.length > 0) parts.push(`(?:${alternatives(long)})`);
  if (short.length > 0) parts.push(`(?<![A-Za-z0-9])(?:${alternatives(short)})(?![A-Za-z0-9])`);
  // Any case: a hex key printed upper-case is the same key (masking a little more is harmless).
  const whole = new RegExp(parts.join('|'), 'gi');
  // The regex engine, not a stripped copy of the text, decides what is a gap: a gap's spelling may share
  // a character with the key (`\0` before a key starting with 0), and only backtracking gets both right.
  const gap = `(?:${GAP.source})*`;
  const split =
    longKeys.length > 0
      ? new RegExp(longKeys.map((k) => Array.from(k, escapeRegex).join(gap)).join('|'), 'gi')
      : undefined;
  return { whole, split };
}

/** `text` with a key split by gaps (control characters, terminal sequences, their escapes) masked too. */
function maskSplit(text: string, split: RegExp): string {
  GAP.lastIndex = 0;
  return GAP.test(text) ? text.replace(split, MASK) : text;
}

function mask(text: string, masker: Masker | undefined): string {
  if (!masker) return text;
  const out = text.replace(masker.whole, MASK);
  return masker.split ? maskSplit(out, masker.split) : out;
}

/** `text` with every registered key (and `extra` ones) masked as `***`, in any spelling and any case. */
export function redactSecrets(text: string, extra?: readonly string[]): string {
  if (extra && extra.length > 0) {
    // The CLI passes the same keys with every line it prints: compile their masker once.
    const id = JSON.stringify([...secrets, ...extra]);
    if (extraMasker?.id !== id) extraMasker = { id, masker: maskerFor([...secrets, ...extra]) };
    return mask(text, extraMasker.masker);
  }
  if (secrets.size === 0) return text;
  if (maskerStale) {
    masker = maskerFor(secrets);
    maskerStale = false;
  }
  return mask(text, masker);
}

/**
 * Masks the keys in an error made from someone else's text (a `cause` such as JSON.parse's SyntaxError,
 * which quotes the body): its message and stack, and those of its own causes.
 */
export function redactError(err: unknown, depth = 0): void {
  if (!(err instanceof Error) || depth > 4 || secrets.size === 0) return;
  try {
    const message = redactSecrets(err.message);
    if (message !== err.message) {
      err.message = message;
      if (typeof err.stack === 'string') err.stack = redactSecrets(err.stack);
    }
  } catch {
    // A frozen or exotic error: leave it.
  }
  redactError(err.cause, depth + 1);
}

/**
 * A URL as messages show it: its user and password (`http://user:pass@host/`) masked as `***`, the rest
 * as given. Text that does not parse as a URL gets the same treatment by its shape, `//…@`.
 */
export function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return url;
    parsed.username = MASK;
    parsed.password = '';
    return parsed.href;
  } catch {
    return url.replace(/\/\/[^/?#@\s]*@/, `//${MASK}@`);
  }
}
