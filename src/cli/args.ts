/**
 * Command-line parsing on `node:util` `parseArgs`, plus what it lacks: option help text, typed accessors
 * that validate with "Expected …, got …" messages, and positional argument checks. Every failure is a
 * `UsageError` (exit code 2).
 */
import { parseArgs } from 'node:util';
import { UsageError } from './errors.js';

export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  readonly multiple?: boolean;
  /** Placeholder of the value in help, e.g. `FILE`. */
  readonly arg?: string;
  readonly help: string;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

export type Values = Readonly<Record<string, string | boolean | (string | boolean)[] | undefined>>;

export interface ParsedArgs {
  readonly values: Values;
  readonly positionals: readonly string[];
}

/** Options every command takes. */
export const COMMON_OPTIONS: OptionSpecs = {
  help: { type: 'boolean', short: 'h', help: 'Show this help.' },
  quiet: { type: 'boolean', short: 'q', help: 'Print nothing on stderr but errors.' },
  debug: {
    type: 'boolean',
    help: 'On failure, print the full error with its causes (the key stays hidden).',
  },
};

/** Options of the commands that talk to the service. */
export const CONNECTION_OPTIONS: OptionSpecs = {
  'base-url': {
    type: 'string',
    arg: 'URL',
    help: 'The service address (default: $DQS_BASE_URL; with neither, the embedded emulator).',
  },
  'api-key': {
    type: 'string',
    arg: 'KEY',
    help: 'The API key (default: $DQS_API_KEY). Never printed, but visible to others in `ps`: prefer the variable or --api-key-file.',
  },
  'api-key-file': {
    type: 'string',
    arg: 'FILE',
    help: 'Read the API key from the first line of FILE (- reads stdin).',
  },
  timeout: {
    type: 'string',
    arg: 'SECONDS',
    help: 'How long to wait for each answer of the service, 1 to 3600 (default 60); a failed try is retried.',
  },
  'allow-insecure-http': {
    type: 'boolean',
    help: 'Allow sending the key over plain http:// to a host other than this machine.',
  },
  proxy: {
    type: 'string',
    arg: 'URL',
    help: 'HTTP(S) proxy, e.g. http://user:pass@proxy:3128 (default: $HTTPS_PROXY/$HTTP_PROXY, less $NO_PROXY).',
  },
  'ca-file': {
    type: 'string',
    arg: 'PATH',
    help: "Also trust the CA certificates (PEM) in PATH, e.g. your company's root CA. Or NODE_EXTRA_CA_CERTS.",
  },
};

export const JSON_OPTION: OptionSpecs = {
  json: { type: 'boolean', help: 'Print one JSON document on stdout instead of a table.' },
};

export function parse(command: string, argv: readonly string[], options: OptionSpecs): ParsedArgs {
  const config: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {};
  for (const [name, spec] of Object.entries(options)) {
    config[name] = {
      type: spec.type,
      ...(spec.short ? { short: spec.short } : {}),
      ...(spec.multiple ? { multiple: true } : {}),
    };
  }
  try {
    const { values, positionals } = parseArgs({
      args: splitShortEquals(argv, options),
      options: config,
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Values, positionals };
  } catch (err) {
    // parseArgs' own messages name the option; drop its advice about `--`, which rarely applies here.
    const message = String((err as Error).message).replace(/\. To specify a positional argument.*$/s, '');
    throw new UsageError(message, command);
  }
}

/**
 * `-o=FILE` as `-o FILE`, the way `--out=FILE` is `--out FILE`. parseArgs reads `-o=y.csv` as the value
 * `=y.csv`, so the export went to a file named `=y.csv`. Only for a short option that takes a value, and
 * only before `--`.
 */
function splitShortEquals(argv: readonly string[], options: OptionSpecs): string[] {
  const takesValue = new Set(
    Object.values(options)
      .filter((o) => o.type === 'string' && o.short)
      .map((o) => o.short),
  );
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const m = /^-([A-Za-z])=(.*)$/s.exec(a);
    if (m && takesValue.has(m[1]!)) out.push(`-${m[1]}`, m[2]!);
    else out.push(a);
  }
  return out;
}

/** The positionals by name; too few or too many is a usage error. `?` marks an optional one. */
export function positionals(command: string, args: ParsedArgs, names: readonly string[]): string[] {
  const required = names.filter((n) => !n.endsWith('?'));
  if (args.positionals.length < required.length) {
    const missing = required.slice(args.positionals.length).map((n) => `<${n}>`);
    throw new UsageError(`missing ${missing.join(' ')}`, command);
  }
  if (args.positionals.length > names.length) {
    const extra = args.positionals.slice(names.length);
    throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`, command);
  }
  return [...args.positionals];
}

export function flag(values: Values, name: string): boolean {
  return values[name] === true;
}

export function str(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}

export function list(values: Values, name: string): string[] {
  const v = values[name];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
}

/**
 * `DQS_DECODER=json` (tests, benchmarks, bug hunts): read pages with the library's reference decoders
 * instead of the byte decoders. Read here, at the edge: the library's option normalizer reads no
 * environment. An unknown value is the library's `InvalidArgumentError` (`decoder`).
 */
export function decoderFromEnv(env: NodeJS.ProcessEnv = process.env): { decoder?: 'fast' | 'json' } {
  return env.DQS_DECODER ? { decoder: env.DQS_DECODER as 'fast' | 'json' } : {};
}

/** An integer option, validated: `--page-size abc` is a usage error naming the option and the value. */
export function int(
  command: string,
  values: Values,
  name: string,
  min: number,
  max?: number,
): number | undefined {
  const raw = str(values, name);
  if (raw === undefined) return undefined;
  const n = /^\s*[+-]?\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || (max !== undefined && n > max)) {
    const range = max === undefined ? `>= ${min}` : `from ${min} to ${max}`;
    throw new UsageError(`Expected --${name} to be an integer ${range}, got ${JSON.stringify(raw)}`, command);
  }
  return n;
}

/** One of a fixed set of words. */
export function choice<T extends string>(
  command: string,
  values: Values,
  name: string,
  allowed: readonly T[],
): T | undefined {
  const raw = str(values, name);
  if (raw === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new UsageError(
      `Expected --${name} to be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`,
      command,
    );
  }
  return raw as T;
}
