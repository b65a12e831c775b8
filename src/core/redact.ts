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
let pattern: RegExp | undefined;

/** Registers a key to be masked from now on. Empty strings are ignored. */
export function registerSecret(secret: string | undefined): void {
  if (!secret || secrets.has(secret)) return;
  secrets.add(secret);
  if (secrets.size > MAX_SECRETS) secrets.delete(secrets.values().next().value as string);
  pattern = undefined;
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
  ]);
  return [...forms].filter((f) => f.length > 0);
}

function regexFor(list: Iterable<string>): RegExp | undefined {
  const forms = [...new Set([...list].flatMap(secretForms))]
    // Longest first, so an escaped spelling is masked whole, not only its unescaped prefix.
    .sort((a, b) => b.length - a.length)
    .map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  if (forms.length === 0) return undefined;
  // A whole token only (not inside a longer run of letters and digits), so a short test key such as `k`
  // does not mangle every word that contains a k.
  return new RegExp(`(?<![A-Za-z0-9])(?:${forms.join('|')})(?![A-Za-z0-9])`, 'g');
}

/** `text` with every registered key (and `extra` ones) masked as `***`. */
export function redactSecrets(text: string, extra?: readonly string[]): string {
  if (extra && extra.length > 0) {
    const re = regexFor([...secrets, ...extra]);
    return re ? text.replace(re, MASK) : text;
  }
  if (secrets.size === 0) return text;
  pattern ??= regexFor(secrets);
  return pattern ? text.replace(pattern, MASK) : text;
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
