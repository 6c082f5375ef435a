/** `windsock pipeline webhook-secret`: the secret provider deliveries are checked with, as GET .../webhook-secret shows it. */
import { InvalidArgumentError, type Command } from 'commander';
import { NotFoundError } from '../../core/errors';
import { CommandError, orgBySlug, print, withServices, type Cli } from '../context';

/** `ORG_SLUG/PIPELINE_SLUG` as its two slugs. */
function target(value: string): [string, string] {
  const [org, pipeline, extra] = value.split('/');
  if (!org || !pipeline || extra !== undefined) throw new InvalidArgumentError('must be ORG_SLUG/PIPELINE_SLUG');
  return [org, pipeline];
}

export function pipelineCommands(program: Command, cli: Cli): void {
  program
    .command('pipeline')
    .description('pipelines: webhook-secret')
    .command('webhook-secret')
    .description("print a pipeline's webhook secret (what provider deliveries are checked with); alone on the last line, for scripts")
    .argument('<ORG_SLUG/PIPELINE_SLUG>', 'the pipeline', target)
    .option('--rotate', 'replace it first: deliveries signed with the old one are refused from then on', false)
    .action(async ([orgSlug, pipelineSlug]: [string, string], o: { rotate: boolean }) => {
      await withServices(cli, async (s) => {
        const org = await orgBySlug(s, orgSlug);
        let secret: string;
        try {
          secret = await s.pipelines.operatorWebhookSecret(org.id, pipelineSlug, { rotate: o.rotate });
        } catch (err) {
          if (err instanceof NotFoundError) throw new CommandError(`no pipeline "${pipelineSlug}" in ${org.slug}`);
          throw err;
        }
        if (o.rotate) print(cli, `rotated the webhook secret of ${org.slug}/${pipelineSlug}; deliveries signed with the old one are refused now. The new one:`);
        print(cli, secret);
      });
    });
}
