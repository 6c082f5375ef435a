/**
 * Which agents may run a job: the job's `agent_query_rules` (`queue=deploy`, `os=linux`,
 * `queue=deploy-*`) against the agent's `key=value` tags. Every rule must hold. An agent without
 * a `queue` tag is in the `default` queue, and a job without a `queue` rule targets it, as the
 * real service does; the rule `*` alone targets any agent. Pure.
 */

function parseTag(tag: string): [string, string] {
  const i = tag.indexOf('=');
  return i < 0 ? [tag, 'true'] : [tag.slice(0, i), tag.slice(i + 1)];
}

/** A glob where `*` matches any run of characters and everything else is literal. */
function globMatches(pattern: string, value: string): boolean {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`, 's').test(value);
}

/** The agent's tags as a map, with the implicit `queue=default`. */
export function agentTags(metaData: string[]): Map<string, string[]> {
  const tags = new Map<string, string[]>();
  for (const tag of metaData) {
    const [k, v] = parseTag(tag);
    tags.set(k, [...(tags.get(k) ?? []), v]);
  }
  if (!tags.has('queue')) tags.set('queue', ['default']);
  return tags;
}

export function queueOf(metaData: string[]): string {
  return agentTags(metaData).get('queue')![0]!;
}

/**
 * `defaultQueue`: the queue a job without a `queue` rule targets (`default`; for a cluster's
 * job, its cluster's default queue, and null when the cluster has none: then no agent matches).
 */
export function matchesQueryRules(rules: string[], metaData: string[], defaultQueue: string | null = 'default'): boolean {
  const tags = agentTags(metaData);
  const effective = rules.filter((r) => r !== '*');
  if (rules.includes('*') && effective.length === 0) return true;
  if (!rules.includes('*') && !effective.some((r) => parseTag(r)[0] === 'queue')) {
    if (defaultQueue === null) return false;
    effective.push(`queue=${defaultQueue}`);
  }
  return effective.every((rule) => {
    const [key, pattern] = parseTag(rule);
    return (tags.get(key) ?? []).some((value) => globMatches(pattern, value));
  });
}
