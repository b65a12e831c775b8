/**
 * Whether the cache directory and the files read from it can be trusted, checked as ssh checks `~/.ssh`:
 * whoever can write them chooses the rows a hit serves (an entry's checksum guards against accidents, not
 * against a writer), so the directory, its `entries/` and every file read there must belong to this user
 * and be writable by no one else. A directory that is not is not used at all for that query (the result is
 * read from the service): one warning saying why and how to fix it, never a forged result.
 *
 * A file is opened without following a link (`O_NOFOLLOW`) and without waiting for a writer
 * (`O_NONBLOCK`: opening a FIFO for reading blocks until one comes, and a blocked open holds a thread of
 * the pool, which no timeout or signal frees), then checked on the open descriptor (`fstat`), so what is
 * checked is what is read: a link to `/dev/zero` or a FIFO costs one failed open, not a hang or an endless
 * read.
 *
 * Windows has no POSIX owner or mode bits (nor `O_NOFOLLOW` and `O_NONBLOCK`): there the per-user profile
 * directory's ACLs are what protects the cache, and only "a regular file" is checked.
 */
import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** The directory (or a file the cache needs in it) is not safe to use: `fix` says how to make it so. */
export class UnsafeCache extends Error {
  constructor(
    readonly reason: string,
    readonly fix: string,
  ) {
    super(`${reason}; ${fix}`);
  }
}

/** A file of the cache that must not be read (a link, not a regular file, someone else's). */
export class UntrustedFile extends Error {}

const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
const GROUP_OR_OTHERS_WRITE = 0o022;

function kindOf(info: Stats): string {
  if (info.isFIFO()) return 'a FIFO';
  if (info.isSymbolicLink()) return 'a symbolic link';
  if (info.isDirectory()) return 'a directory';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  if (info.isSocket()) return 'a socket';
  return 'not a regular file';
}

function writers(mode: number): string {
  const group = (mode & 0o020) !== 0;
  const others = (mode & 0o002) !== 0;
  return group && others ? 'group and others' : group ? 'its group' : 'others';
}

/** What is wrong with who owns or may write `path`, or `undefined`. */
function ownershipProblem(info: Stats, path: string): { reason: string; owned: boolean } | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  if (info.uid !== uid) {
    return { reason: `${path} belongs to uid ${info.uid}, not to this user (uid ${uid})`, owned: false };
  }
  if ((info.mode & GROUP_OR_OTHERS_WRITE) !== 0) {
    const mode = (info.mode & 0o7777).toString(8).padStart(4, '0');
    return { reason: `${path} is writable by ${writers(info.mode)} (mode ${mode})`, owned: true };
  }
  return undefined;
}

/** Checks one directory of the cache; `info` from `stat` (the cache dir) or `lstat` (`entries/`). */
function checkDirectory(info: Stats, path: string, root: string): void {
  if (!info.isDirectory()) {
    throw new UnsafeCache(`${path} is ${kindOf(info)}, not a directory`, `remove it (rm ${path})`);
  }
  const problem = ownershipProblem(info, path);
  if (!problem) return;
  throw new UnsafeCache(
    problem.reason,
    problem.owned
      ? `make it yours alone: chmod 700 ${path}`
      : `remove it (rm -r ${root}) or use a cache directory of your own (cache.dir, XDG_CACHE_HOME)`,
  );
}

/**
 * Creates the cache directory (owner-only) if missing (unless `create` is false), then throws `UnsafeCache` unless it and its
 * `entries/` are directories of this user that no one else may write. The cache directory itself may be
 * reached through a link (a `~/.cache` on another disk): its target is what is checked. `entries/` must be
 * a directory, not a link: nothing of ours ever makes it one.
 */
export async function trustCacheDir(dir: string, { create = true } = {}): Promise<void> {
  let created: unknown;
  if (create) {
    await mkdir(dir, { recursive: true, mode: 0o700 }).catch((err: unknown) => {
      created = err;
    });
  }
  let info: Stats;
  try {
    info = await stat(dir);
  } catch (err) {
    throw created ?? err;
  }
  checkDirectory(info, dir, dir);
  const entries = join(dir, 'entries');
  const inner = await lstat(entries).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined; // made owner-only by the first entry written
    throw err;
  });
  if (inner) checkDirectory(inner, entries, dir);
}

/**
 * Opens a file of the cache for reading: never through a link, never waiting on a FIFO, and only a regular
 * file of this user that no one else may write (`UntrustedFile` otherwise; a missing file is Node's
 * `ENOENT`). The caller bounds what it reads by `size` and a maximum of its own: the size a file's
 * contents claim is never trusted.
 */
export async function openOwnFile(
  path: string,
): Promise<{ handle: FileHandle; size: number; mtimeMs: number }> {
  let handle: FileHandle;
  try {
    handle = await open(path, READ_FLAGS);
  } catch (err) {
    // ELOOP (Linux, macOS) or EMLINK (FreeBSD): the name is a symbolic link.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK') throw new UntrustedFile(`${path} is a symbolic link`);
    throw err;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new UntrustedFile(`${path} is ${kindOf(info)}`);
    const problem = ownershipProblem(info, path);
    if (problem) throw new UntrustedFile(problem.reason);
    return { handle, size: info.size, mtimeMs: info.mtimeMs };
  } catch (err) {
    await handle.close();
    throw err;
  }
}
