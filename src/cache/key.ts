/**
 * The key of a cache entry: base URL, dataset, normalised query body and a keyed hash (HMAC) of the API
 * key. Two accounts may see different data, so the credential is part of the key; the credential itself is
 * never written anywhere, and the HMAC's secret is a random value of this cache directory, so a copied
 * entry or listing says nothing about the key (a plain hash of a short key could be guessed offline).
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { link, mkdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileSafely } from '../core/safe-file.js';
import { openOwnFile, UnsafeCache, UntrustedFile } from './trust.js';

const SECRET_FILE = 'secret';
const SECRET_BYTES = 32;

/** Creates the cache directory (owner-only) if missing. */
export async function ensureCacheDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

/**
 * The directory's HMAC secret, created at first use. It is written whole under a name of its own and then
 * hard-linked to `secret`, which never replaces an existing file: of processes creating it at once, one
 * wins and all read the winner's (a rename would let each keep its own for a moment, and make different
 * keys for one result).
 */
export async function cacheSecret(dir: string): Promise<Buffer> {
  const path = join(dir, SECRET_FILE);
  const existing = await readSecret(path);
  if (existing) return existing;
  await ensureCacheDir(dir);
  const mine = join(dir, `${SECRET_FILE}-${randomBytes(8).toString('hex')}`);
  await writeFileSafely(mine, randomBytes(SECRET_BYTES), { mode: 0o600 });
  try {
    await link(mine, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await unlink(mine).catch(() => {});
  }
  const created = await readSecret(path);
  if (!created) throw new Error(`the cache secret ${path} is not ${SECRET_BYTES} bytes`);
  return created;
}

/**
 * The secret, or `undefined` when there is none or it is not `SECRET_BYTES` long. One that is not a
 * regular file of this user alone (a link, a FIFO) makes the cache unsafe: whoever planted it could know
 * it, hence every key. Never more than `SECRET_BYTES` are read, whatever the file claims.
 */
async function readSecret(path: string): Promise<Buffer | undefined> {
  let opened: Awaited<ReturnType<typeof openOwnFile>>;
  try {
    opened = await openOwnFile(path);
  } catch (err) {
    if (err instanceof UntrustedFile) {
      throw new UnsafeCache(`the cache secret ${err.message}`, `remove it (rm ${path}): a new one is made`);
    }
    return undefined;
  }
  const { handle, size } = opened;
  try {
    if (size !== SECRET_BYTES) return undefined;
    const bytes = Buffer.alloc(SECRET_BYTES);
    const { bytesRead } = await handle.read(bytes, 0, SECRET_BYTES, 0);
    return bytesRead === SECRET_BYTES ? bytes : undefined;
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

/** The credential's HMAC, hex: stands for the account in keys, never reversible to the key. */
export function accountId(secret: Buffer, credential: string | undefined): string {
  return createHmac('sha256', secret)
    .update(credential ?? '')
    .digest('hex');
}

/**
 * The body as a canonical string: object members sorted by name (JSON objects are unordered), arrays in
 * their order (a service may order rows by the tickers' order), and an empty `tickers` the same as none
 * (the spec: "omitted or empty ... means no ticker filter").
 */
export function canonicalBody(body: Readonly<Record<string, unknown>>): string {
  const copy: Record<string, unknown> = { ...body };
  if (Array.isArray(copy.tickers) && copy.tickers.length === 0) delete copy.tickers;
  return stringifySorted(copy);
}

function stringifySorted(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stringifySorted).join(',')}]`;
  const members: string[] = [];
  for (const key of Object.keys(value).sort()) {
    const member = (value as Record<string, unknown>)[key];
    if (member === undefined) continue;
    members.push(`${JSON.stringify(key)}:${stringifySorted(member)}`);
  }
  return `{${members.join(',')}}`;
}

export interface KeyParts {
  readonly baseUrl: string;
  readonly datasetId: string;
  /** `canonicalBody()` of the query body. */
  readonly body: string;
  /** `accountId()` of the credential. */
  readonly account: string;
  /** A result of `split: true` (the rows of every part): an entry apart from the unsplit result's. */
  readonly split?: boolean;
  /**
   * A checkpoint of an unfinished split read (`'plan'`, or `'part ' + JSON of the part's tickers`): a file
   * apart from the split result's entry, never looked up as a result.
   */
  readonly checkpoint?: string;
}

/** 64 lower-case hex characters: the entry's file name. */
export function entryKey(parts: KeyParts): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        'dqs-client cache key',
        parts.baseUrl,
        parts.datasetId,
        parts.body,
        parts.account,
        // Only when set: the keys of every entry filled before the option existed stay the same.
        ...(parts.split ? ['split'] : []),
        ...(parts.checkpoint ? ['checkpoint', parts.checkpoint] : []),
      ]),
    )
    .digest('hex');
}
