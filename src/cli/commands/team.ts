/** `windsock team ...`: an organization's teams and their members, through the service the REST API uses. */
import { Option, type Command } from 'commander';
import type { TeamPrivacy, TeamRole } from '../../teams/repository';
import { everyValue } from '../../core/enum-values';
import { email, operatorIn, orgBySlug, print, slug, text, userByEmail, withServices, type Cli } from '../context';

const TEAM_ROLES = everyValue<TeamRole>()(['member', 'maintainer'] as const satisfies readonly TeamRole[]);
const PRIVACIES = everyValue<TeamPrivacy>()(['visible', 'secret'] as const satisfies readonly TeamPrivacy[]);

interface TeamOptions {
  org: string;
  team: string;
}

export function teamCommands(program: Command, cli: Cli): void {
  const team = program.command('team').description("an organization's teams: create, list, delete, add-member, remove-member, set-role");
  /** A subcommand acting on one team of one organization. */
  const onTeam = (name: string, description: string) =>
    team.command(name).description(description).requiredOption('--org <SLUG>', 'the organization').requiredOption('--team <SLUG|UUID>', 'the team');

  team
    .command('create')
    .description('create a team')
    .requiredOption('--org <SLUG>', 'the organization')
    .requiredOption('--name <NAME>', 'its name', text)
    .option('--slug <SLUG>', 'its slug (default: made from the name)', slug)
    .option('--description <TEXT>', 'what it is for')
    .addOption(new Option('--privacy <PRIVACY>', 'secret teams are seen only by their members and admins').choices(PRIVACIES).default('visible'))
    .action(async (o: { org: string; name: string; slug?: string; description?: string; privacy: TeamPrivacy }) => {
      await withServices(cli, async (s) => {
        const org = await orgBySlug(s, o.org);
        const created = await s.teams.create(operatorIn(org), { name: o.name, slug: o.slug, description: o.description, privacy: o.privacy });
        print(cli, `created team ${created.slug} (${created.id}) in ${org.slug}`);
      });
    });

  team
    .command('list')
    .description("the organization's teams, one a line: slug, id, privacy, name (tab-separated)")
    .requiredOption('--org <SLUG>', 'the organization')
    .action(async (o: { org: string }) => {
      await withServices(cli, async (s) => {
        const org = await orgBySlug(s, o.org);
        const { items } = await s.teams.list(operatorIn(org), {}, 0, 1_000_000);
        for (const t of items) print(cli, `${t.slug}\t${t.id}\t${t.privacy}\t${t.name}`);
      });
    });

  onTeam('delete', 'delete a team; its memberships and pipeline and suite grants go with it').action(async (o: TeamOptions) => {
    await withServices(cli, async (s) => {
      const org = await orgBySlug(s, o.org);
      const found = await s.teams.get(operatorIn(org), o.team);
      await s.teams.delete(operatorIn(org), found.id);
      print(cli, `deleted team ${found.slug} from ${org.slug}`);
    });
  });

  onTeam('add-member', 'add a member of the organization to a team')
    .requiredOption('--email <EMAIL>', 'the user', email)
    .addOption(new Option('--role <ROLE>', "their role in the team (default: the team's default role)").choices(TEAM_ROLES))
    .action(async (o: TeamOptions & { email: string; role?: TeamRole }) => {
      await withServices(cli, async (s) => {
        const org = await orgBySlug(s, o.org);
        const found = await s.teams.get(operatorIn(org), o.team);
        const m = await s.teams.addMember(operatorIn(org), found.id, { email: o.email, role: o.role });
        print(cli, `added ${m.user.email} to team ${found.slug} as ${m.role}`);
      });
    });

  onTeam('remove-member', 'take a user out of a team')
    .requiredOption('--email <EMAIL>', 'the user', email)
    .action(async (o: TeamOptions & { email: string }) => {
      await withServices(cli, async (s) => {
        const org = await orgBySlug(s, o.org);
        const found = await s.teams.get(operatorIn(org), o.team);
        const u = await userByEmail(s, o.email);
        await s.teams.removeMember(operatorIn(org), found.id, u.id);
        print(cli, `removed ${u.email} from team ${found.slug}`);
      });
    });

  onTeam('set-role', "change a member's role in a team")
    .requiredOption('--email <EMAIL>', 'the user', email)
    .addOption(new Option('--role <ROLE>', 'their new role').choices(TEAM_ROLES).makeOptionMandatory())
    .action(async (o: TeamOptions & { email: string; role: TeamRole }) => {
      await withServices(cli, async (s) => {
        const org = await orgBySlug(s, o.org);
        const found = await s.teams.get(operatorIn(org), o.team);
        const u = await userByEmail(s, o.email);
        const m = await s.teams.setMemberRole(operatorIn(org), found.id, u.id, o.role);
        print(cli, `${u.email} is now ${m.role} of team ${found.slug}`);
      });
    });
}
