/** `windsock service ...`: an organization's notification services, through the service the REST API uses. */
import { InvalidArgumentError, type Command } from 'commander';
import { isProvider, PROVIDERS, REFUSED_PROVIDERS } from '../../notification-services/provider-settings';
import type { ProviderId } from '../../notification-services/repository';
import { CommandError, list, operatorIn, orgBySlug, print, repeated, uuid, withServices, type Cli } from '../context';

interface CreateOptions {
  org: string;
  provider: ProviderId;
  url: string;
  description?: string;
  token?: string;
  events?: string[];
  theme?: string;
  header: string[];
  branches?: string;
  buildStates?: string[];
}

const PROVIDER_IDS = Object.keys(PROVIDERS).join(', ');

/** One of PROVIDERS; a provider of the real API this server does not offer is refused with the reason. */
function provider(value: string): ProviderId {
  if (isProvider(value)) return value;
  const why = REFUSED_PROVIDERS[value];
  throw new InvalidArgumentError(`${why ? `${value} ${why}. ` : ''}Allowed choices are ${PROVIDER_IDS}.`);
}

/** `NAME=VALUE` headers as an object. */
function headers(pairs: string[]): Record<string, string> {
  return Object.fromEntries(
    pairs.map((h) => {
      const eq = h.indexOf('=');
      if (eq < 1) throw new CommandError(`--header must be NAME=VALUE, got "${h}"`);
      return [h.slice(0, eq).trim(), h.slice(eq + 1)];
    }),
  );
}

export function serviceCommands(program: Command, cli: Cli): void {
  const service = program.command('service').description("an organization's notification services: list, create, delete, enable, disable");

  service
    .command('list')
    .description("the organization's notification services: id, provider, enabled or disabled, scope, description")
    .requiredOption('--org <SLUG>', 'the organization')
    .action(async (o: { org: string }) => {
      await withServices(cli, async (s) => {
        const org = await orgBySlug(s, o.org);
        let after: string | undefined;
        do {
          const page = await s.notificationServices.list(operatorIn(org), { after, limit: 100 });
          for (const n of page.items) {
            print(cli, `${n.id}  ${n.provider}  ${n.enabled ? 'enabled' : 'disabled'}  ${n.scope}${n.description ? `  ${n.description}` : ''}`);
          }
          after = page.next ?? undefined;
        } while (after);
      });
    });

  service
    .command('create')
    .description('add a notification service')
    .requiredOption('--org <SLUG>', 'the organization')
    .requiredOption('--provider <PROVIDER>', `what it sends to: ${PROVIDER_IDS}`, provider)
    .requiredOption('--url <URL>', "the webhook's URL, the Slack incoming webhook's, or the OpenTelemetry endpoint")
    .option('--description <TEXT>', 'what it is for')
    .option('--token <TOKEN>', 'webhook: sent in X-Buildkite-Token')
    .option('--events <EVENT,...>', 'webhook: the events it receives', list)
    .option('--theme <THEME>', 'slack: text or emoji')
    .option('--header <NAME=VALUE>', 'open_telemetry_tracing: a header sent with each export (may repeat)', repeated(false), [])
    .option('--branches <FILTER>', 'only builds of these branches')
    .option('--build-states <STATE,...>', 'only builds that reach these states', list)
    .action(async (o: CreateOptions) => {
      await withServices(cli, async (s) => {
        const org = await orgBySlug(s, o.org);
        const settings: Record<string, unknown> = o.provider === 'open_telemetry_tracing' ? { endpoint: o.url } : { url: o.url };
        if (o.token !== undefined) settings.token = o.token;
        if (o.events !== undefined) settings.events = o.events;
        if (o.theme !== undefined) settings.theme = o.theme;
        if (o.header.length) settings.headers = headers(o.header);
        const created = await s.notificationServices.create(operatorIn(org), {
          provider: o.provider,
          description: o.description,
          branch_configuration: o.branches,
          build_states: o.buildStates ? Object.fromEntries(o.buildStates.map((x) => [x, true])) : undefined,
          settings,
        });
        print(cli, `created ${created.provider} notification service ${created.id} in ${org.slug}`);
      });
    });

  for (const verb of ['delete', 'enable', 'disable'] as const) {
    service
      .command(verb)
      .description(`${verb} a notification service`)
      .requiredOption('--org <SLUG>', 'the organization')
      .requiredOption('--id <UUID>', 'the service (its id: `service list`)', uuid)
      .action(async (o: { org: string; id: string }) => {
        await withServices(cli, async (s) => {
          const org = await orgBySlug(s, o.org);
          if (verb === 'delete') {
            await s.notificationServices.delete(operatorIn(org), o.id);
            print(cli, `deleted notification service ${o.id} from ${org.slug}`);
          } else {
            const n = await s.notificationServices.setEnabled(operatorIn(org), o.id, verb === 'enable');
            print(cli, `notification service ${n.id} is ${n.enabled ? 'enabled' : 'disabled'}`);
          }
        });
      });
  }
}
