/**
 * A retried job's successor says where it came from (issue 12 item 5): `retry_source` is
 * `{job_id, retry_type}` (the documented sample jobs' shape), `manual` for a retry through the
 * REST API and `automatic` for one the step's rules made; a job that retried nothing has null.
 * A passed job is retried only when its step says `retry.manual.permit_on_passed: true`, as the
 * REST jobs documentation says ("Retries a failed OR timed_out OR a job whose step has ...
 * permit_on_passed: true").
 */
import { auth, describeEachDatabase, type TestContext } from '../../support/context';
import { runNextJob, givenBuildAndAgent, type TestAgent } from '../../support/agents';
import type { JobJson } from '../../support/types';

const runNext = async (ctx: TestContext, agent: TestAgent, exitStatus: number) => (await runNextJob(ctx, agent, exitStatus)).id;

describeEachDatabase('retry_source', (ctx) => {
  it('names the retried job and the manual retry on the job a REST retry makes', async () => {
    const { token, agent, url } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: flaky\n');
    const failed = await runNext(ctx(), agent, 1);
    const res = await ctx().http().put(`${url}/jobs/${failed}/retry`).set(auth(token)).expect(200);
    expect(res.body).toMatchObject({ state: 'scheduled', retry_type: 'manual', retry_source: { job_id: failed, retry_type: 'manual' } });
    const jobs = (await ctx().http().get(`${url}?include_retried_jobs=true`).set(auth(token)).expect(200)).body.jobs as JobJson[];
    expect(jobs.map((j) => [j.id === failed ? 'first' : 'retry', j.retry_source])).toEqual([
      ['first', null],
      ['retry', { job_id: failed, retry_type: 'manual' }],
    ]);
    // A retry of the retry names its own predecessor.
    const second = await runNext(ctx(), agent, 1);
    const again = await ctx().http().put(`${url}/jobs/${second}/retry`).set(auth(token)).expect(200);
    expect(again.body.retry_source).toEqual({ job_id: second, retry_type: 'manual' });
  });

  it('names the automatic retry on the job a retry rule makes', async () => {
    const { token, agent, url } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: flaky\n    retry:\n      automatic: true\n');
    const failed = await runNext(ctx(), agent, 1);
    const jobs = (await ctx().http().get(`${url}?include_retried_jobs=true`).set(auth(token)).expect(200)).body.jobs as JobJson[];
    expect(jobs[1]).toMatchObject({ state: 'scheduled', retry_type: 'automatic', retry_source: { job_id: failed, retry_type: 'automatic' } });
    expect(jobs[0]!.retry_source).toBeNull();
  });

  it('retries a passed job only when its step permits it', async () => {
    const { token, agent, url } = await givenBuildAndAgent(
      ctx(),
      ['steps:', '  - command: plain', '  - command: permitted', '    retry:', '      manual:', '        permit_on_passed: true', ''].join('\n'),
    );
    const ids: Record<string, string> = {};
    for (let i = 0; i < 2; i++) {
      const id = await runNext(ctx(), agent, 0);
      const job = ((await ctx().http().get(url).set(auth(token)).expect(200)).body.jobs as JobJson[]).find((j) => j.id === id)!;
      ids[job.command!] = id;
    }
    // jobs.md: "400 Bad Request: Only failed, timed out or canceled jobs can be retried".
    const refused = await ctx().http().put(`${url}/jobs/${ids.plain}/retry`).set(auth(token)).expect(400);
    expect(refused.body.message).toBe('Only failed, timed out or canceled jobs can be retried');
    const allowed = await ctx().http().put(`${url}/jobs/${ids.permitted}/retry`).set(auth(token)).expect(200);
    expect(allowed.body.retry_source).toEqual({ job_id: ids.permitted, retry_type: 'manual' });
  });
});
