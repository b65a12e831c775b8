/**
 * `runCli()`: one command line to one exit code. Finds the command, parses its options, runs it with a
 * context (lazy connection, stderr notices, the interrupt signal), reports any failure as one line, and
 * always closes the connection (and with it the embedded emulator).
 */
import { escapeControls } from '../core/control-chars.js';
import { withoutCredentials } from '../core/redact.js';
import { VERSION } from '../core/version.js';
import { COMMON_OPTIONS, CONNECTION_OPTIONS, flag, parse } from './args.js';
import type { CliIo, Command, CommandContext } from './command.js';
import { COMMANDS } from './commands/index.js';
import {
  type Connection,
  openConnection,
  readApiKeyFile,
  resolveConnection,
  secretsOf,
} from './connection.js';
import { UsageError } from './errors.js';
import { ExitCode } from './exit-codes.js';
import { commandHelp, mainHelp } from './help.js';
import { abortedWithin, INTERRUPT_GRACE_MS, isBrokenPipe } from './interrupt.js';
import { debugText, redact, report } from './report.js';

function write(stream: NodeJS.WriteStream, text: string): void {
  stream.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** A line for stderr: the secrets masked, control and bidi characters escaped. */
function safeLine(line: string, secrets: readonly string[]): string {
  return escapeControls(redact(line, secrets));
}

/** A multi-line text (the `--debug` dump): each line made safe, the line breaks kept. */
function safeText(text: string): string {
  return text
    .split('\n')
    .map((l) => escapeControls(l))
    .join('\n');
}

function findCommand(name: string): Command {
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    const names = COMMANDS.map((c) => c.name);
    const near = names.find((n) => n.startsWith(name.slice(0, 3)));
    throw new UsageError(
      `unknown command ${JSON.stringify(name)}${near ? ` (did you mean \`${near}\`?)` : ''}`,
    );
  }
  return command;
}

export async function runCli(argv: readonly string[], io: CliIo, signal: AbortSignal): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '--version' || first === '-V') {
    write(io.stdout, VERSION);
    return ExitCode.ok;
  }
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    const topic = first === 'help' ? rest[0] : undefined;
    if (topic !== undefined && COMMANDS.some((c) => c.name === topic)) {
      write(io.stdout, commandHelp(findCommand(topic)));
      return ExitCode.ok;
    }
    // Bare `dqs` is a usage error (scripts should notice), but still shows what to type.
    write(first === undefined ? io.stderr : io.stdout, mainHelp(COMMANDS, VERSION));
    return first === undefined ? ExitCode.usage : ExitCode.ok;
  }

  let command: Command | undefined;
  let secrets: string[] = secretsOf({}, io.env);
  let debug = argv.includes('--debug');
  let connection: Connection | undefined;
  let opening: Promise<Connection> | undefined;
  let options: readonly string[] = [];
  // Retries by what was retried (`GET https://…`), for the error line of a timeout: the tries waited for.
  const retries = new Map<string, number>();
  const started = performance.now();
  try {
    command = findCommand(first);
    const specs = {
      ...command.options,
      ...(command.connects ? CONNECTION_OPTIONS : {}),
      ...COMMON_OPTIONS,
    };
    options = Object.keys(specs);
    const args = parse(command.name, rest, specs);
    secrets = secretsOf(args.values, io.env);
    debug = flag(args.values, 'debug');
    if (flag(args.values, 'help')) {
      write(io.stdout, commandHelp(command));
      return ExitCode.ok;
    }
    const fileKey = command.connects ? await readApiKeyFile(args.values, io) : undefined;
    secrets = secretsOf(args.values, io.env, fileKey);
    const quiet = flag(args.values, 'quiet');
    const settings = resolveConnection(args.values, io.env, fileKey, command.name);
    const ctx: CommandContext = {
      io,
      signal,
      quiet,
      // Lines on stderr may quote the server: masked, and escaped for the terminal.
      info: (line) => {
        if (!quiet) write(io.stderr, safeLine(`dqs: ${line}`, secrets));
      },
      warn: (line) => write(io.stderr, safeLine(`dqs: warning: ${line}`, secrets)),
      debug: (line) => {
        if (debug) write(io.stderr, safeLine(`dqs [debug]: ${line}`, secrets));
      },
      connect: () => {
        opening ??= openConnection(settings, ctx.info).then((c) => {
          connection = c;
          c.client.on('retry', (e: { what: string }) => {
            retries.set(e.what, (retries.get(e.what) ?? 0) + 1);
          });
          return c;
        });
        return opening;
      },
    };
    ctx.debug(
      settings.kind === 'service'
        ? // Before the library refuses a base URL with credentials in it: never shown, even here.
          `service ${withoutCredentials(settings.baseUrl)}, API key ${settings.apiKey ? 'set' : 'not set'}`
        : 'no service address: embedded emulator',
    );
    // A signal that came while this process was starting: stop before any work, as any later one would.
    signal.throwIfAborted();
    return await command.run(args, ctx);
  } catch (err) {
    // A command interrupted mid-flight fails with whatever the abort caused; the signal says why. A
    // broken pipe may be the interrupt's doing, a moment before this process handles it (interrupt.ts).
    if (isBrokenPipe(err)) await abortedWithin(signal, INTERRUPT_GRACE_MS);
    const cause = signal.aborted ? signal.reason : err;
    const { exitCode, line } = report(cause, {
      command: command?.name,
      baseUrl: connection?.baseUrl,
      secrets,
      options,
      elapsedMs: performance.now() - started,
      retries,
    });
    if (line) write(io.stderr, line);
    if (debug && !signal.aborted) write(io.stderr, safeText(debugText(err, secrets)));
    return exitCode;
  } finally {
    if (connection) await connection.close().catch(() => {});
    else if (opening) await opening.then((c) => c.close()).catch(() => {});
  }
}
