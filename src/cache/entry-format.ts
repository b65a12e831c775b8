/**
 * The bytes of one cache entry:
 *
 *   "DQSCACHE" | format version (u32 LE) | header length (u32 LE) | header (JSON) | Arrow IPC stream | crc32
 *
 * The header says what the entry is (query, total, truncation, last_date_updated, descriptors, how its
 * values were typed, when it was fetched); the IPC stream holds the library's own batches, schema and
 * field metadata included; the last 4 bytes are the CRC-32 (u32 LE) of everything before them. An entry is
 * served only after the whole file has been checked, so a truncated or altered entry is never read as a
 * result; an entry of another format version is never parsed beyond its first 12 bytes.
 *
 * CRC-32, not a cryptographic hash (format 1 had SHA-256): what the checksum guards against is accident,
 * a write cut by a crash or `kill -9`, a torn copy, a flipped bit on disk, which CRC-32 detects (every
 * burst up to 32 bits, all but 2^-32 of the rest). Someone able to write the cache directory (owner-only)
 * could as well write a matching SHA-256. And a hit pays for it on its critical path: over a 193 MB entry
 * SHA-256 took 110-120 ms on the benchmark machine (1.6-1.7 GB/s), zlib's CRC-32 40-43 ms (4.6 GB/s).
 */
import { crc32 } from 'node:zlib';
import type { ColumnKind } from '../convert/index.js';
import type { FieldDescriptor } from '../core/wire.js';
import type { ResultPart, SplitInfo } from '../query/split-info.js';
import { openOwnFile, UntrustedFile } from './trust.js';

export const FORMAT_VERSION = 2;
const MAGIC = Buffer.from('DQSCACHE', 'latin1');
const PREFIX_BYTES = MAGIC.length + 8;
export const CHECKSUM_BYTES = 4;
/** Descriptors of a few thousand columns fit many times over; anything larger is not ours. */
const MAX_HEADER_BYTES = 16 * 1024 * 1024;

export interface EntryHeader {
  /** The entry key (its file name). */
  readonly key: string;
  readonly baseUrl: string;
  readonly datasetId: string;
  /** The canonical query body. */
  readonly body: string;
  readonly queryId: string;
  readonly total: number;
  readonly truncated: boolean;
  /** `last_date_updated` of the result's pages when it was fetched. */
  readonly lastDateUpdated: string;
  readonly formats: readonly string[];
  readonly fields: readonly FieldDescriptor[];
  /** The stream options that shaped the values: a stream asking for others reads the service. */
  readonly types: Readonly<Record<string, ColumnKind>> | null;
  readonly onInvalid: 'error' | 'null';
  /** When the rows were fetched, ms since the epoch. */
  readonly fetchedAt: number;
  /**
   * With `checkTickers`: the body's tickers the dataset did not carry when the entry was filled (often
   * none). Absent: the entry was filled without the check.
   */
  readonly unknownTickers?: readonly string[];
  /** A result of `split: true` read in parts: the parts, and the whole list's (truncated) total. */
  readonly split?: SplitInfo;
  /**
   * A checkpoint of a split read (`split: true`) not finished yet, never served as a result of its own:
   * `plan`, the parts the list was split into (in `split`; no rows), or `part`, the rows of one part
   * (`tickers`), whose `queryId`, `total` and `truncated` are the part's. See split-checkpoint.ts.
   */
  readonly checkpoint?: SplitCheckpointMark;
}

export type SplitCheckpointMark =
  | { readonly kind: 'plan' }
  | { readonly kind: 'part'; readonly tickers: readonly string[] };

/**
 * Why an entry cannot be used; never shown to users as an error (the result is fetched instead).
 * `foreign`: a sound entry of another query (copied or linked to this entry's name); `unsafe`: not a
 * regular file of this user that only this user can write (a link, a FIFO, someone else's file).
 */
export class EntryProblem extends Error {
  constructor(
    readonly reason: 'missing' | 'version' | 'corrupt' | 'foreign' | 'unsafe',
    message: string,
  ) {
    super(message);
  }
}

/**
 * The bytes before the IPC stream. The header is padded with spaces (still JSON) to a multiple of 8
 * bytes, so the IPC stream starts 8-aligned in the file, hence in the buffer it is read into: apache-arrow
 * copies every message body that is not 8-aligned (measured: 0.5 s of a 1 s read of a 35 MB entry).
 */
export function encodePrefix(header: EntryHeader): Buffer {
  const text = JSON.stringify(header);
  const length = Buffer.byteLength(text, 'utf8');
  const json = Buffer.from(text + ' '.repeat((8 - ((PREFIX_BYTES + length) % 8)) % 8), 'utf8');
  const prefix = Buffer.alloc(PREFIX_BYTES);
  MAGIC.copy(prefix, 0);
  prefix.writeUInt32LE(FORMAT_VERSION, MAGIC.length);
  prefix.writeUInt32LE(json.length, MAGIC.length + 4);
  return Buffer.concat([prefix, json]);
}

/** Checks magic and version; returns the header's length. */
function checkPrefix(prefix: Buffer, size: number): number {
  if (prefix.length < PREFIX_BYTES || !prefix.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new EntryProblem('corrupt', 'not a dqs-client cache entry');
  }
  const version = prefix.readUInt32LE(MAGIC.length);
  if (version !== FORMAT_VERSION) {
    throw new EntryProblem('version', `entry format ${version}, this library reads ${FORMAT_VERSION}`);
  }
  const length = prefix.readUInt32LE(MAGIC.length + 4);
  if (length > MAX_HEADER_BYTES || PREFIX_BYTES + length + CHECKSUM_BYTES > size) {
    throw new EntryProblem('corrupt', `header length ${length} does not fit the entry's ${size} bytes`);
  }
  return length;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function parseHeader(json: Buffer): EntryHeader {
  let h: Partial<Record<keyof EntryHeader, unknown>>;
  try {
    h = JSON.parse(json.toString('utf8'));
  } catch {
    throw new EntryProblem('corrupt', 'header is not JSON');
  }
  const ok =
    h !== null &&
    typeof h === 'object' &&
    isString(h.key) &&
    isString(h.baseUrl) &&
    isString(h.datasetId) &&
    isString(h.body) &&
    isString(h.queryId) &&
    isCount(h.total) &&
    typeof h.truncated === 'boolean' &&
    isString(h.lastDateUpdated) &&
    Array.isArray(h.formats) &&
    h.formats.every(isString) &&
    Array.isArray(h.fields) &&
    h.fields.every((f) => f !== null && typeof f === 'object' && isString((f as FieldDescriptor).id)) &&
    (h.types === null || (typeof h.types === 'object' && !Array.isArray(h.types))) &&
    (h.onInvalid === 'error' || h.onInvalid === 'null') &&
    isCount(h.fetchedAt) &&
    (h.unknownTickers === undefined ||
      (Array.isArray(h.unknownTickers) && h.unknownTickers.every(isString))) &&
    (h.split === undefined || isSplitInfo(h.split)) &&
    (h.checkpoint === undefined || isCheckpointMark(h.checkpoint));
  if (!ok) throw new EntryProblem('corrupt', 'header lacks a member or has one of the wrong type');
  return h as EntryHeader;
}

function isCheckpointMark(v: unknown): v is SplitCheckpointMark {
  if (v === null || typeof v !== 'object') return false;
  const { kind, tickers } = v as { kind?: unknown; tickers?: unknown };
  if (kind === 'plan') return true;
  return kind === 'part' && Array.isArray(tickers) && tickers.every(isString);
}

function isSplitInfo(v: unknown): v is SplitInfo {
  if (v === null || typeof v !== 'object') return false;
  const { parts, cappedTotal } = v as Partial<Record<keyof SplitInfo, unknown>>;
  return (
    isCount(cappedTotal) &&
    Array.isArray(parts) &&
    parts.every((p: Partial<Record<keyof ResultPart, unknown>> | null) => {
      if (p === null || typeof p !== 'object') return false;
      return (
        Array.isArray(p.tickers) &&
        p.tickers.every(isString) &&
        isString(p.queryId) &&
        isCount(p.total) &&
        typeof p.truncated === 'boolean' &&
        isCount(p.firstRow)
      );
    })
  );
}

/** What a query asks of an entry: the entry must have been filled for exactly this. */
export interface EntryIdentity {
  readonly key: string;
  readonly baseUrl: string;
  readonly datasetId: string;
  /** The canonical query body. */
  readonly body: string;
}

/**
 * Throws `foreign` unless the header records the query it is asked to answer. The file name alone says
 * nothing: an entry copied or linked under another name is sound (its checksum holds) and, within
 * `maxAge`, nothing else would compare it with the query. The key covers the account too (an HMAC of the
 * credential), which the header cannot repeat without writing something derived from it twice.
 */
export function checkIdentity(header: EntryHeader, expected: EntryIdentity): void {
  for (const member of ['key', 'baseUrl', 'datasetId', 'body'] as const) {
    if (header[member] !== expected[member]) {
      throw new EntryProblem('foreign', `the entry answers another query (its ${member} differs)`);
    }
  }
}

/** An entry file opened for reading (see `openOwnFile`), its failures as `EntryProblem`s. */
export async function openEntry(path: string): ReturnType<typeof openOwnFile> {
  try {
    return await openOwnFile(path);
  } catch (err) {
    if (err instanceof UntrustedFile) throw new EntryProblem('unsafe', err.message);
    throw new EntryProblem('missing', `cannot open ${path}: ${(err as NodeJS.ErrnoException).code}`);
  }
}

/** The header alone (for lookups and `dqs cache list`): no checksum, which needs the whole file. */
export async function readHeader(
  path: string,
): Promise<{ header: EntryHeader; size: number; mtimeMs: number }> {
  const { handle, size, mtimeMs } = await openEntry(path);
  try {
    const prefix = Buffer.alloc(PREFIX_BYTES);
    const { bytesRead } = await handle.read(prefix, 0, PREFIX_BYTES, 0);
    const length = checkPrefix(prefix.subarray(0, bytesRead), size);
    const json = Buffer.alloc(length);
    const read = await handle.read(json, 0, length, PREFIX_BYTES);
    if (read.bytesRead !== length) throw new EntryProblem('corrupt', 'header cut short');
    return { header: parseHeader(json), size, mtimeMs };
  } finally {
    await handle.close();
  }
}

/** An entry's checksum, computed piece by piece (Node's zlib CRC-32 takes the running value). */
export class EntryChecksum {
  #value = 0;

  update(bytes: Uint8Array): this {
    this.#value = crc32(bytes, this.#value);
    return this;
  }

  digest(): Buffer {
    const out = Buffer.alloc(CHECKSUM_BYTES);
    out.writeUInt32LE(this.#value >>> 0, 0);
    return out;
  }
}

/**
 * Verifies a whole entry's bytes (magic, version, checksum, header) and returns its parts. `digest`: the
 * checksum of all but the last `CHECKSUM_BYTES` when the reader computed it on the way.
 */
export function verifyEntry(bytes: Buffer, digest?: Buffer): { header: EntryHeader; ipc: Uint8Array } {
  const length = checkPrefix(bytes.subarray(0, PREFIX_BYTES), bytes.length);
  const end = bytes.length - CHECKSUM_BYTES;
  const actual = digest ?? new EntryChecksum().update(bytes.subarray(0, end)).digest();
  if (!actual.equals(bytes.subarray(end))) {
    throw new EntryProblem('corrupt', 'checksum mismatch (a cut or altered entry)');
  }
  const header = parseHeader(bytes.subarray(PREFIX_BYTES, PREFIX_BYTES + length));
  return { header, ipc: bytes.subarray(PREFIX_BYTES + length, end) };
}
