/**
 * How many SQL statements a build response costs. Build lists and gets are a measured hot path
 * (BENCHMARKS.md): the full pipeline a build embeds (provider settings included) comes from the
 * pipeline row those reads already bring, serialized once per pipeline per page, so showing it
 * must not add a statement. The budgets are the counts measured before the pipeline was
 * embedded whole (commit f0a2632); a change that adds a statement per request fails here.
 * One was added on purpose since: the organization's API IP allow-list, read fresh on every request
 * to its paths (issue 30's API settings: a change applies to the very next request), is one
 * primary-key read, counted by the three organization-scoped reads (`/v2/builds` has no organization).
 */
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';

const BUDGET: Record<string, Record<string, number>> = {
  sqlite: { get: 5, pipelineList: 5, orgList: 5, allList: 4 },
  postgres: { get: 4, pipelineList: 4, orgList: 4, allList: 3 },
};

/**
 * Reads run while the request is served, the fewest of five tries. Writes are left out, and
 * the fewest taken, because the rate limiter's and the token's bookkeeping write beside
 * requests, whenever they fall due (a build read path writes nothing).
 */
async function countQueries(ctx: TestContext, run: () => Promise<unknown>): Promise<number> {
  let fewest = Infinity;
  for (let i = 0; i < 5; i++) {
    let n = 0;
    const listener = (q: { sql?: string }) => {
      if (!/^\s*(insert|update|delete)\b/i.test(q.sql ?? '')) n++;
    };
    ctx.services.db.on('query', listener);
    try {
      await run();
    } finally {
      ctx.services.db.off('query', listener);
    }
    fewest = Math.min(fewest, n);
  }
  return fewest;
}

describeEachDatabase('statements per build response', (ctx) => {
  it('stays within the budget for get and the three list scopes, with agents and two GitHub pipelines', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const agent = await givenAgent(ctx(), reg, 'runner');
    const base = `/v2/organizations/${org.slug}/pipelines`;
    const slugs: string[] = [];
    for (const name of ['one', 'two']) {
      const res = await ctx()
        .http()
        .post(base)
        .set(auth(token))
        .send({ name, repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make\n  - command: test\n' })
        .expect(201);
      slugs.push(res.body.slug as string);
      for (let i = 0; i < 3; i++)
        await ctx().http().post(`${base}/${res.body.slug}/builds`).set(auth(token)).send({ commit: 'abc', branch: 'main' }).expect(201);
    }
    // One job on an agent, so the responses embed an agent too.
    const job = (await ctx().http().get('/v3/ping').set(agentAuth(agent.token)).expect(200)).body.job;
    await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(agent.token)).expect(200);

    const get = (url: string) => () => ctx().http().get(url).set(auth(token)).expect(200);
    const counts = {
      get: await countQueries(ctx(), get(`${base}/${slugs[0]}/builds/1`)),
      pipelineList: await countQueries(ctx(), get(`${base}/${slugs[0]}/builds`)),
      orgList: await countQueries(ctx(), get(`/v2/organizations/${org.slug}/builds`)),
      allList: await countQueries(ctx(), get('/v2/builds')),
    };
    if (process.env.PRINT_QUERY_COUNTS) console.log(ctx().kind, JSON.stringify(counts));
    for (const [name, n] of Object.entries(counts)) expect([name, n]).toEqual([name, Math.min(n, BUDGET[ctx().kind]![name]!)]);
  });
});
