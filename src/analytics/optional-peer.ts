/**
 * Loading an optional peer dependency (nodejs-polars) on first use, and saying precisely what is missing
 * when it cannot be loaded. "Install X" is wrong advice when X is installed and its platform binary is
 * what is missing (npm's `--omit=optional`, a lock file written on another platform, a copied
 * node_modules): the user would install it again and get the same failure.
 */
import { MissingPackageError } from '../core/errors.js';

/** The `Cannot find module 'name'` of Node's resolvers (CommonJS and ESM spell it alike). */
const NOT_FOUND = /Cannot find (?:module|package) '([^']+)'/;

/**
 * `import(name)`, or a `MissingPackageError` that names what is missing: the package itself, or (when
 * the package resolves but its own import fails for want of another module) that module.
 */
export async function importOptionalPeer<T>(name: string, feature: string): Promise<T> {
  try {
    // A variable specifier: the peer is optional, bundlers and TypeScript must not require it.
    return (await import(name)) as T;
  } catch (err) {
    throw diagnose(name, feature, err);
  }
}

function diagnose(name: string, feature: string, err: unknown): MissingPackageError {
  const options = { cause: err };
  const message = err instanceof Error ? err.message : String(err);
  const missing = NOT_FOUND.exec(message)?.[1];
  if (!isInstalled(name) || missing === name) {
    return new MissingPackageError(
      name,
      name,
      `${feature} needs the optional package ${name}, which is not installed: npm install ${name}`,
      options,
    );
  }
  if (missing?.startsWith(`${name}-`)) {
    return new MissingPackageError(
      name,
      missing,
      `${feature}: ${name} is installed but its native binary for this platform ` +
        `(${process.platform}-${process.arch}), the package ${missing}, is missing. It is an optional ` +
        `dependency of ${name}: reinstall without --omit=optional (npm install ${name}), or add ${missing}`,
      options,
    );
  }
  return new MissingPackageError(
    name,
    missing ?? name,
    `${feature}: ${name} is installed but cannot be loaded: ${firstLine(message)}`,
    options,
  );
}

/** Whether `name` resolves from here, whatever loading it would do. */
function isInstalled(name: string): boolean {
  try {
    import.meta.resolve(name);
    return true;
  } catch {
    return false;
  }
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
