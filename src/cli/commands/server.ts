/**
 * `windsock serve` and `windsock migrate`. serve's flags only set the environment setting each
 * stands for before loadConfig() reads it (config.ts validates them all in one place), so a flag
 * and its variable behave the same.
 */
import cluster from 'node:cluster';
import type { Command } from 'commander';
import { servePrimary } from '../../cluster';
import { loadConfig } from '../../config';
import { serve } from '../../server';
import { print, withServices, type Cli } from '../context';

/** Each flag of `serve` and the setting it sets: a string flag its value, a boolean one `true`. */
const SERVE_FLAGS: { flag: string; setting: string; help: string }[] = [
  { flag: '--port <N>', setting: 'PORT', help: 'port to listen on (0: any free one)' },
  { flag: '--host <HOST>', setting: 'HOST', help: 'address to listen on' },
  { flag: '--data-dir <DIR>', setting: 'DATA_DIR', help: 'where the SQLite database, the JWT secret and artifacts are kept' },
  { flag: '--ephemeral', setting: 'WINDSOCK_EPHEMERAL', help: 'keep everything in memory, gone at exit' },
  { flag: '--fixtures <FILE>', setting: 'WINDSOCK_FIXTURES', help: 'load organizations, users, tokens, pipelines, builds... from this file at start' },
  { flag: '--admin-token <TOKEN>', setting: 'WINDSOCK_ADMIN_TOKEN', help: 'the first-start admin token, fixed instead of generated' },
  { flag: '--clock <VALUE>', setting: 'WINDSOCK_CLOCK', help: 'real (default), an ISO-8601 instant (frozen there) or an offset such as +90s, -2h, +3d' },
  { flag: '--workers <N>', setting: 'WINDSOCK_WORKERS', help: 'processes serving the port, each a full instance (auto: one per core); above 1 needs Postgres' },
  { flag: '--test-controls', setting: 'WINDSOCK_TEST_CONTROLS', help: 'enable the reset and clock endpoints under /_windsock (admin token only)' },
];

export function serverCommands(program: Command, cli: Cli): void {
  const command = program
    .command('serve')
    .description('start the HTTP service (applies migrations first); runs until SIGTERM or SIGINT')
    .addHelpText(
      'after',
      `\nEach flag sets the environment setting named here; the rest come from the environment (docs/settings.md):\n${SERVE_FLAGS.map((f) => `  ${f.flag.split(' ')[0]!.padEnd(16)} ${f.setting}`).join('\n')}`,
    );
  for (const f of SERVE_FLAGS) command.option(f.flag, f.help);
  command.action(async (o: Record<string, string | boolean | undefined>, cmd: Command) => {
    for (const f of SERVE_FLAGS) {
      const value = o[cmd.options.find((x) => x.flags === f.flag)!.attributeName()];
      if (value !== undefined) process.env[f.setting] = value === true ? 'true' : String(value);
    }
    const config = loadConfig();
    // --workers N: this process forks N workers, each of which runs this command again as one instance.
    if (config.workers > 1 && cluster.isPrimary) await servePrimary(config);
    else await serve(config);
    cli.running = true;
  });

  program
    .command('migrate')
    .description('apply database migrations (creates the database if there is none yet)')
    .action(async () => {
      await withServices(cli, async () => print(cli, 'migrations applied'), { create: true });
    });
}
