/** `windsock org create|list`: organizations (the API has no endpoint that creates one). */
import type { Command } from 'commander';
import { isUniqueViolation } from '../../db/knex';
import { slugify } from '../../pipelines/slug';
import { CommandError, print, printRows, slug, text, withServices, type Cli } from '../context';

const slugTaken = (slug: string) => new CommandError(`an organization with slug "${slug}" already exists (windsock org list shows them)`);

export function orgCommands(program: Command, cli: Cli): void {
  const org = program.command('org').description('organizations: create, list');

  org
    .command('create')
    .description('create an organization')
    .requiredOption('--name <NAME>', 'its name', text)
    .option('--slug <SLUG>', 'its slug in URLs (default: made from the name)', slug)
    .option('--teams', 'with Teams enabled', false)
    .action(async (o: { name: string; slug?: string; teams: boolean }) => {
      const orgSlug = o.slug ?? slugify(o.name);
      if (!orgSlug) throw new CommandError(`no slug can be made from the name "${o.name}"; give one with --slug`);
      await withServices(cli, async (s) => {
        // Checked first for a clear message; the unique index still decides a race.
        if (await s.orgs.findBySlug(orgSlug)) throw slugTaken(orgSlug);
        const created = await s.orgs.create({ name: o.name, slug: orgSlug, teamsEnabled: o.teams }).catch((err: unknown) => {
          throw isUniqueViolation(err) ? slugTaken(orgSlug) : err;
        });
        print(cli, `created organization ${created.slug} (${created.id})${created.teamsEnabled ? ' with teams enabled' : ''}`);
      });
    });

  org
    .command('list')
    .description('every organization: slug, name, teams enabled, id, created')
    .option('--json', 'print JSON for scripts', false)
    .action(async (o: { json: boolean }) => {
      await withServices(cli, async (s) => {
        const rows = (await s.orgs.all()).map((x) => ({ slug: x.slug, name: x.name, teams: x.teamsEnabled, id: x.id, created: x.createdAt }));
        printRows(cli, rows, { slug: 'SLUG', name: 'NAME', teams: 'TEAMS', id: 'ID', created: 'CREATED' }, o.json);
      });
    });
}
