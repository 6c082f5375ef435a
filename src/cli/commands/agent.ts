/** `windsock agent`: the reference agent. It needs no database and no server settings, only the endpoint and a registration token. */
import os from 'node:os';
import { Option, type Command } from 'commander';
import { runAgents } from '../agent';
import { httpUrl, list, text, wholeNumber, type Cli } from '../context';

export function agentCommand(program: Command, cli: Cli): void {
  program
    .command('agent')
    .description('run jobs on this machine (the reference agent)')
    .requiredOption('--endpoint <URL>', 'the Windsock service, such as http://127.0.0.1:8080', httpUrl)
    .requiredOption('--token <TOKEN>', 'an agent registration token (windsock agent-token create)', text)
    .addOption(new Option('--tags <TAG,...>', 'its tags, such as queue=default,os=linux').argParser(list).default(['queue=default'], 'queue=default'))
    .option('--spawn <N>', 'how many agents to run, 1 to 64', wholeNumber(1, 64), 1)
    .addOption(new Option('--name <NAME>', 'its name (several: NAME-1, NAME-2...)').argParser(text).default(os.hostname(), "this machine's host name"))
    .option('--cancel-grace-period <SECONDS>', 'seconds between SIGTERM and SIGKILL when a job is stopped, 0 to 3600', wholeNumber(0, 3600), 10)
    .action(async (o: { endpoint: string; token: string; tags: string[]; spawn: number; name: string; cancelGracePeriod: number }) => {
      const controller = new AbortController();
      for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => controller.abort());
      await runAgents({
        endpoint: o.endpoint,
        token: o.token,
        tags: o.tags.length ? o.tags : ['queue=default'],
        name: o.name,
        spawn: o.spawn,
        cancelGracePeriodSeconds: o.cancelGracePeriod,
        signal: controller.signal,
        log: (line) => cli.err.write(`windsock agent: ${line}\n`),
      });
    });
}
