#!/usr/bin/env node
/**
 * `windsock <command>`: serve, migrate, the administration commands (organizations, users, teams,
 * tokens, emojis, notification services) and the reference agent. Commands other than `agent`
 * read the same settings as the server from the environment. Parsing, help and usage errors are
 * commander's; each area's commands are in ./commands/.
 *
 * Exit codes: 0 done; 1 the command failed (a refusal, something not found, a database error);
 * 2 a usage mistake (unknown command or option, a missing or invalid option, a bad setting).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command, CommanderError, InvalidArgumentError, type Option } from 'commander';
import { ConfigError } from '../config';
import { isUniqueViolation } from '../db/knex';
import { DomainError, ValidationError } from '../core/errors';
import { CommandError, UsageError, type Cli } from './context';
import { agentCommand } from './commands/agent';
import { emojiCommands } from './commands/emoji';
import { orgCommands } from './commands/org';
import { pipelineCommands } from './commands/pipeline';
import { serverCommands } from './commands/server';
import { serviceCommands } from './commands/service';
import { teamCommands } from './commands/team';
import { tokenCommands } from './commands/token';
import { userCommands } from './commands/user';
import { errorMessage, fieldOf, stringField } from '../core/guards';

/** The version in the package's own package.json (found upwards: from src/cli in the tree, from dist/src/cli once built). */
function packageVersion(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
      const version = stringField(pkg, 'version');
      if (stringField(pkg, 'name') === 'windsock' && version) return version;
    }
    if (path.dirname(dir) === dir) return 'unknown';
  }
}

const EXIT_CODES = `
Exit codes: 0 done, 1 the command failed, 2 a usage mistake (unknown command or option, a
missing or invalid option, a bad setting). Settings come from the environment (docs/settings.md).`;

/** Every command, each area's from its own file. */
function program(cli: Cli): Command {
  const root = new Command('windsock')
    .description('A self-hostable CI REST service speaking the Buildkite REST API v2 dialect')
    .version(packageVersion(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help for a command')
    .addHelpText('after', EXIT_CODES);
  serverCommands(root, cli);
  orgCommands(root, cli);
  userCommands(root, cli);
  teamCommands(root, cli);
  tokenCommands(root, cli);
  pipelineCommands(root, cli);
  emojiCommands(root, cli);
  serviceCommands(root, cli);
  agentCommand(root, cli);
  each(root, (cmd) => {
    // Help asked for goes to stdout; errors are thrown (see below) and printed by `failure`, once.
    cmd.configureOutput({ writeOut: (s) => cli.out.write(s), writeErr: () => undefined, outputError: () => undefined }).exitOverride((err) => {
      throw usageOf(err, cmd);
    });
    for (const option of cmd.options) refuseAfterMissing(option);
  });
  // Commander checks for missing required options after parsing, and parsing is where an option's
  // value is refused: the refusals wait until here, so a missing option is named first.
  root.hook('preAction', (_root, action) => {
    for (const option of action.options) {
      const value: unknown = action.getOptionValue(option.attributeName());
      if (value instanceof Refused)
        action.error(`error: option '${option.flags}' argument '${value.value}' is invalid. ${value.reason}`, { code: 'commander.invalidArgument' });
    }
  });
  return root;
}

/** An option value its parser (or `.choices()`) refused, held until required options are checked. */
class Refused {
  constructor(
    readonly value: string,
    readonly reason: string,
  ) {}
}

function refuseAfterMissing(option: Option): void {
  const parse = option.parseArg;
  if (!parse) return;
  option.parseArg = <T>(value: string, previous: T): T => {
    if (previous instanceof Refused) return previous; // a repeated option keeps its first refusal
    try {
      return parse(value, previous);
    } catch (err) {
      // cast: commander types an option's value as its parser's T; a refusal stands in for it until the options are checked.
      if (err instanceof InvalidArgumentError) return new Refused(value, err.message) as T;
      throw err;
    }
  };
}

function each(cmd: Command, fn: (c: Command) => void): void {
  fn(cmd);
  for (const sub of cmd.commands) each(sub, fn);
}

/** `windsock org create`, from the command up. */
function fullName(cmd: Command): string {
  return cmd.parent ? `${fullName(cmd.parent)} ${cmd.name()}` : cmd.name();
}

/** Commander's way out: help or the version asked for stays as is (exit 0); a mistake becomes a UsageError with the command's help. */
function usageOf(err: CommanderError, cmd: Command): Error {
  if (err.exitCode === 0) return err;
  const help = cmd.helpInformation();
  // A command with subcommands named alone (`windsock org`): which ones there are.
  if (err.code === 'commander.help')
    return new UsageError(`missing command for "${fullName(cmd)}": one of ${cmd.commands.map((c) => c.name()).join(', ')}`, help);
  return new UsageError(err.message.replace(/^error: /, ''), help);
}

/**
 * Runs `windsock <argv>`: its exit code (-1: `serve`, which keeps running). Results go to `out`,
 * notes (which database was opened) to `err`. A failure is thrown: `failure` says what to print.
 */
export async function main(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  const cli: Cli = { out, err };
  try {
    await program(cli).parseAsync(argv, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError && e.exitCode === 0) return 0;
    throw e;
  }
  return cli.running ? -1 : 0;
}

/** What a failed command prints to stderr, and its exit code. Only a bug prints a stack. */
export function failure(err: unknown): { text: string; code: number } {
  if (err instanceof UsageError) return { text: `windsock: ${err.message}\n${err.help ? `\n${err.help}` : ''}`, code: 2 };
  if (err instanceof ConfigError) return { text: `windsock: ${err.message}\n`, code: 2 };
  if (err instanceof ValidationError) return { text: `windsock: ${err.errors.map((e) => `${e.field} ${e.code}`).join('; ')}\n`, code: 1 };
  if (err instanceof CommandError || err instanceof DomainError) return { text: `windsock: ${err.message}\n`, code: 1 };
  if (isUniqueViolation(err)) {
    // Knex puts the statement, values included, in front of the driver's message: leave it out.
    const detail = stringField(err, 'detail') ?? errorMessage(err).split(' - ').at(-1);
    return { text: `windsock: that already exists (${detail})\n`, code: 1 };
  }
  // A driver's or the system's error (database unreachable, connection refused, an API's answer): its message, and its cause's.
  // A programming error (a bug, not a refusal): its stack, for the report.
  if (err instanceof Error && PROGRAMMING_ERRORS.some((kind) => err instanceof kind) && !err.cause) return { text: `windsock: ${err.stack}\n`, code: 1 };
  const text = stringField(err, 'message');
  const message = text ? (text.split(' - ').at(-1) ?? text) : String(err);
  const cause = stringField(fieldOf(err, 'cause'), 'message');
  return { text: `windsock: ${message}${cause ? ` (${cause})` : ''}\n`, code: 1 };
}

const PROGRAMMING_ERRORS = [TypeError, ReferenceError, RangeError, SyntaxError];

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exitCode = code;
    },
    (err: unknown) => {
      const { text, code } = failure(err);
      process.stderr.write(text);
      process.exitCode = code;
    },
  );
}
