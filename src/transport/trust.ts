/**
 * The certificate authorities a TLS connection to the service (or an https proxy) trusts. Node's `ca`
 * option replaces its root store, so a company root CA passed alone would make every public certificate
 * untrusted: the `ca` option is added to Node's roots and to `NODE_EXTRA_CA_CERTS`, as a browser adds a
 * company CA to the system's. Verification itself is never turned off.
 */
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { InvalidArgumentError } from '../core/errors.js';

const PEM = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The PEM certificates in a text (a file may hold several, and comments between them). */
export function pemCertificates(text: string): string[] {
  return text.match(PEM) ?? [];
}

/** The `ca` option: PEM text (one or several certificates), a Buffer of it, or a list of either. */
export type CaOption = string | Buffer | readonly (string | Buffer)[];

/** The certificates of the `ca` option, checked: each item must hold at least one PEM certificate. */
export function normalizeCa(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const items = Array.isArray(value) ? value : [value];
  const certs: string[] = [];
  for (const [i, item] of items.entries()) {
    const text = typeof item === 'string' ? item : Buffer.isBuffer(item) ? item.toString('utf8') : undefined;
    const found = text === undefined ? [] : pemCertificates(text);
    if (found.length === 0) {
      const at = Array.isArray(value) ? `ca[${i}]` : 'ca';
      throw new InvalidArgumentError(
        at,
        'Expected PEM text with at least one "-----BEGIN CERTIFICATE-----" block (read the file first: `ca: fs.readFileSync(path)`)',
      );
    }
    certs.push(...found);
  }
  return certs;
}

/**
 * What to pass as TLS `ca` when the user gave certificates: Node's roots, the `NODE_EXTRA_CA_CERTS` file
 * (Node reads it once for its default store, which an explicit `ca` bypasses) and theirs.
 */
export function trustedCas(extra: readonly string[], env: NodeJS.ProcessEnv = process.env): string[] {
  const fromEnv: string[] = [];
  const file = env.NODE_EXTRA_CA_CERTS;
  if (file) {
    try {
      fromEnv.push(...pemCertificates(readFileSync(file, 'utf8')));
    } catch {
      // Node itself only warns about an unreadable file; the connection says what is not trusted.
    }
  }
  return [...rootCertificates, ...fromEnv, ...extra];
}
