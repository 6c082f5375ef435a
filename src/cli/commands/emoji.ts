/** `windsock emoji add`: an organization's custom emojis (`GET .../emojis`; the API has no endpoint that adds one). */
import type { Command } from 'commander';
import { orgBySlug, print, repeated, text, withServices, type Cli } from '../context';

export function emojiCommands(program: Command, cli: Cli): void {
  program
    .command('emoji')
    .description("an organization's custom emojis: add")
    .command('add')
    .description('add a custom emoji to an organization')
    .requiredOption('--org <SLUG>', 'the organization')
    .requiredOption('--name <NAME>', 'its name, used as :NAME:', text)
    .requiredOption('--url <URL>', 'its image (http or https)')
    .option('--alias <NAME>', 'another name for it (may repeat, or list names comma-separated)', repeated(true), [])
    .action(async (o: { org: string; name: string; url: string; alias: string[] }) => {
      await withServices(cli, async (s) => {
        const org = await orgBySlug(s, o.org);
        const emoji = await s.emojis.add(org.id, { name: o.name, url: o.url, aliases: o.alias });
        const aliases = emoji.aliases.length ? ` (aliases ${emoji.aliases.map((a) => `:${a}:`).join(', ')})` : '';
        print(cli, `added emoji :${emoji.name}:${aliases} to ${org.slug}`);
      });
    });
}
