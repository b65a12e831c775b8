/**
 * The entries on disk: `<dir>/entries/<key>.dqsc`, one file per result. The directory is the index: a
 * file's name is its key, its size is what it costs, and its modification time is when it was last used
 * (set when written, touched on every hit), which is what least-recently-used eviction sorts by. No
 * index file means nothing to lock and nothing to get out of step with the entries when a process dies.
 */
import { constants } from 'node:buffer';
import { lstat, lutimes, readdir, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { type RecordBatch, RecordBatchReader } from 'apache-arrow';
import { removeStaleTemps, SafeFile } from '../core/safe-file.js';
import { ipcEncoder } from '../output/ipc-transform.js';
import {
  CHECKSUM_BYTES,
  EntryChecksum,
  type EntryHeader,
  EntryProblem,
  encodePrefix,
  openEntry,
  readHeader,
  verifyEntry,
} from './entry-format.js';
import { ensureCacheDir } from './key.js';

const ENTRY_SUFFIX = '.dqsc';
const ENTRY_NAME = /^[0-9a-f]{64}\.dqsc$/;
export function entriesDir(dir: string): string {
  return join(dir, 'entries');
}

export function entryPath(dir: string, key: string): string {
  return join(entriesDir(dir), `${key}${ENTRY_SUFFIX}`);
}

export interface LoadedEntry {
  readonly header: EntryHeader;
  readonly batches: readonly RecordBatch[];
  readonly bytes: number;
}

/**
 * Reads and verifies a whole entry before anything of it is used: the batches are views into the one
 * buffer read (no copy), and exist only if the checksum, the IPC stream and the row count all agree.
 */
export async function loadEntry(path: string): Promise<LoadedEntry> {
  let bytes: Buffer;
  let digest: Buffer;
  try {
    ({ bytes, digest } = await readWhole(path));
  } catch (err) {
    if (err instanceof EntryProblem) throw err;
    throw new EntryProblem('missing', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code}`);
  }
  const { header, ipc } = verifyEntry(bytes, digest);
  let batches: RecordBatch[];
  try {
    batches = [...RecordBatchReader.from(ipc)];
  } catch (err) {
    throw new EntryProblem('corrupt', `unreadable Arrow IPC: ${(err as Error).message}`);
  }
  const rows = batches.reduce((n, b) => n + b.numRows, 0);
  if (rows !== header.total) {
    throw new EntryProblem('corrupt', `holds ${rows} rows, its header says ${header.total}`);
  }
  return { header, batches, bytes: bytes.length };
}

/** Bytes per read, and reads in flight: measured on the 193 MB entry of 500,000 `job_listings` rows. */
const READ_CHUNK = 4 * 1024 * 1024;
const READS_IN_FLIGHT = 3;
/**
 * The largest entry read: a result has at most the service's 500,000 rows (193 MB for `job_listings`, the
 * widest dataset), and a Buffer holds at most 4 GiB. Only a regular file's own size is ever allocated.
 */
const MAX_ENTRY_BYTES = Math.min(4 * 1024 ** 3, constants.MAX_LENGTH);

/**
 * The whole file in one buffer of its own (offset 0, so 8-aligned), and the checksum of all but its last
 * `CHECKSUM_BYTES`, computed in order while the next chunks are being read: a few reads in flight on the
 * thread pool keep the disk cache's copy going while this thread hashes (one read at a time left this
 * thread idle half the time: 0.82-0.92 s for the 193 MB entry, 0.65-0.67 s with three; `readFile` reads
 * 512 KiB at a time).
 */
async function readWhole(path: string): Promise<{ bytes: Buffer; digest: Buffer }> {
  const { handle, size } = await openEntry(path);
  const reads: Promise<{ bytesRead: number }>[] = [];
  try {
    if (size > MAX_ENTRY_BYTES) {
      throw new EntryProblem('corrupt', `${size} bytes, more than an entry can hold (${MAX_ENTRY_BYTES})`);
    }
    const bytes = Buffer.allocUnsafeSlow(size);
    const hash = new EntryChecksum();
    const hashEnd = Math.max(0, size - CHECKSUM_BYTES);
    const chunks = Math.ceil(size / READ_CHUNK);
    const issue = (i: number) => {
      const at = i * READ_CHUNK;
      reads[i] = handle.read(bytes, at, Math.min(READ_CHUNK, size - at), at);
    };
    for (let i = 0; i < Math.min(READS_IN_FLIGHT, chunks); i++) issue(i);
    let end = 0;
    for (let i = 0; i < chunks; i++) {
      const { bytesRead } = await reads[i]!;
      if (i + READS_IN_FLIGHT < chunks) issue(i + READS_IN_FLIGHT);
      const from = i * READ_CHUNK;
      if (from < hashEnd) hash.update(bytes.subarray(from, Math.min(from + bytesRead, hashEnd)));
      end = from + bytesRead;
      // A short read: the file was cut while we read it; the checksum will say so.
      if (end < Math.min(from + READ_CHUNK, size)) break;
    }
    return { bytes: end === size ? bytes : bytes.subarray(0, end), digest: hash.digest() };
  } finally {
    // Reads still in flight (after a short read or a failure) end before the handle closes.
    await Promise.allSettled(reads);
    await handle.close();
  }
}

/** Marks an entry as just used, for LRU; a vanished entry is not an error. Never through a link. */
export async function touchEntry(path: string): Promise<void> {
  const now = new Date();
  await lutimes(path, now, now).catch(() => {});
}

export async function removeEntry(path: string): Promise<void> {
  await unlink(path).catch(() => {});
}

/**
 * An entry being written: the prefix first, then each batch's IPC bytes as they come, hashed on the way;
 * `commit()` adds the end-of-stream marker and the checksum and renames the file into place. Until then
 * the entry's name holds the previous entry, or nothing.
 */
export class EntryWriter {
  readonly #file: SafeFile;
  readonly #hash = new EntryChecksum();
  readonly #encoder = ipcEncoder('stream');
  #bytes = 0;

  private constructor(file: SafeFile) {
    this.#file = file;
  }

  static async create(dir: string, header: EntryHeader): Promise<EntryWriter> {
    await ensureCacheDir(entriesDir(dir));
    // Owner-only, like the directory: results may be confidential.
    const writer = new EntryWriter(await SafeFile.create(entryPath(dir, header.key), { mode: 0o600 }));
    try {
      await writer.#write([encodePrefix(header)]);
    } catch (err) {
      await writer.discard();
      throw err;
    }
    return writer;
  }

  /** Bytes written so far. */
  get bytes(): number {
    return this.#bytes;
  }

  async #write(chunks: readonly Uint8Array[]): Promise<void> {
    for (const chunk of chunks) {
      this.#hash.update(chunk);
      this.#bytes += chunk.byteLength;
    }
    // Small pieces (IPC message headers, validity bitmaps) are joined: one write each would cost a
    // thread-pool round trip per few bytes.
    let small: Uint8Array[] = [];
    for (const chunk of chunks) {
      if (chunk.byteLength < 64 * 1024) {
        small.push(chunk);
        continue;
      }
      if (small.length) await this.#file.write(Buffer.concat(small));
      small = [];
      await this.#file.write(chunk);
    }
    if (small.length) await this.#file.write(Buffer.concat(small));
  }

  write(batch: RecordBatch): Promise<void> {
    return this.#write(this.#encoder.write(batch));
  }

  async commit(): Promise<void> {
    await this.#write(this.#encoder.close());
    const digest = this.#hash.digest();
    await this.#file.write(digest);
    this.#bytes += digest.length;
    await this.#file.commit();
  }

  /** Removes the unfinished entry; never throws. */
  discard(): Promise<void> {
    return this.#file.abort();
  }
}

export interface ListedFile {
  readonly path: string;
  readonly name: string;
  readonly size: number;
  readonly mtimeMs: number;
  /** A complete entry's name, or anything else (a writer's temporary file). */
  readonly kind: 'entry' | 'temp';
}

/** The files of the entries directory, least recently used first. */
export async function listFiles(dir: string): Promise<ListedFile[]> {
  let names: string[];
  try {
    names = await readdir(entriesDir(dir));
  } catch {
    return [];
  }
  const files: ListedFile[] = [];
  for (const name of names) {
    const path = join(entriesDir(dir), name);
    // lstat: a link is listed as itself, never as what it points at (stat never blocks, even on a FIFO).
    const info = await lstat(path).catch(() => undefined);
    const kind = ENTRY_NAME.test(name) ? 'entry' : 'temp';
    // Anything at an entry's name is listed, so that `prune` removes what cannot be an entry.
    if (!info || info.isDirectory() || (kind === 'temp' && !info.isFile())) continue;
    files.push({ path, name, size: info.size, mtimeMs: info.mtimeMs, kind });
  }
  return files.sort((a, b) => a.mtimeMs - b.mtimeMs);
}

/**
 * Removes least recently used entries until they take at most `maxBytes`. Another process evicting at
 * the same time may remove one more entry than needed: a later miss, never a wrong result.
 */
export async function evict(dir: string, maxBytes: number): Promise<{ removed: number; bytes: number }> {
  const entries = (await listFiles(dir)).filter((f) => f.kind === 'entry');
  let total = entries.reduce((n, f) => n + f.size, 0);
  let removed = 0;
  let bytes = 0;
  for (const f of entries) {
    if (total <= maxBytes) break;
    await removeEntry(f.path);
    total -= f.size;
    removed++;
    bytes += f.size;
  }
  return { removed, bytes };
}

export interface EntryInfo extends ListedFile {
  /** The header, when it could be read; `problem` says why not. */
  readonly header?: EntryHeader;
  readonly problem?: string;
}

/** Every file with what its header says (cheap: the checksum needs the whole file, see `prune`). */
export async function listEntries(dir: string): Promise<EntryInfo[]> {
  const out: EntryInfo[] = [];
  for (const f of await listFiles(dir)) {
    if (f.kind !== 'entry') {
      out.push(f);
      continue;
    }
    try {
      out.push({ ...f, header: (await readHeader(f.path)).header });
    } catch (err) {
      out.push({ ...f, problem: (err as Error).message });
    }
  }
  return out;
}

/** Removes every entry and temporary file (the directory's secret stays). */
export async function clearEntries(dir: string): Promise<{ removed: number; bytes: number }> {
  const files = await listFiles(dir);
  await rm(entriesDir(dir), { recursive: true, force: true });
  return { removed: files.length, bytes: files.reduce((n, f) => n + f.size, 0) };
}

export interface PruneReport {
  readonly corrupt: number;
  readonly temps: number;
  readonly evicted: number;
  readonly bytes: number;
}

/**
 * Removes what can never be served (entries that fail verification or are of another format version,
 * temporary files of writers that died) and then evicts down to `maxBytes`.
 */
export async function pruneEntries(dir: string, maxBytes: number): Promise<PruneReport> {
  let corrupt = 0;
  let bytes = 0;
  // A writer's temporary file whose process is gone (killed mid-write); a live writer's stays.
  const temps = await removeStaleTemps(entriesDir(dir));
  for (const f of await listFiles(dir)) {
    if (f.kind === 'temp') continue;
    try {
      const { header } = await loadEntry(f.path);
      // Sound, but under another entry's name (copied or linked): it can never be served there.
      if (`${header.key}${ENTRY_SUFFIX}` !== f.name) throw new EntryProblem('foreign', 'another name');
    } catch (err) {
      if (!(err instanceof EntryProblem) || err.reason === 'missing') continue;
      await removeEntry(f.path);
      corrupt++;
      bytes += f.size;
    }
  }
  const evicted = await evict(dir, maxBytes);
  return { corrupt, temps, evicted: evicted.removed, bytes: bytes + evicted.bytes };
}
