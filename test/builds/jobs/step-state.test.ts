/**
 * A step's own state and outcome (the docs' glossary and `buildkite-agent step get`), over its
 * jobs' latest attempts: unit cases for each documented value, then `step get` through the agent
 * API on a parallel step whose shards end differently (each store).
 */
import { stepOutcome, stepState } from '../../../src/builds/jobs/step-state';
import type { JobState } from '../../../src/builds/model';
import { describeEachDatabase } from '../../support/context';
import { agentAuth, givenAgent, givenBuildAndAgent, takeNextJob } from '../../support/agents';

const job = (state: JobState, softFailed = false, type: 'script' | 'waiter' | 'manual' | 'trigger' = 'script') => ({ state, softFailed, type });

describe('step state and outcome', () => {
  it.each([
    [[job('waiting'), job('pending')], 'waiting_for_dependencies'],
    [[job('scheduled'), job('waiting')], 'ready'],
    [[job('blocked', false, 'manual')], 'ready'],
    [[job('running'), job('scheduled')], 'running'],
    [[job('passed'), job('scheduled')], 'running'],
    [[job('failed'), job('running')], 'failing'],
    [[job('failed', true), job('running')], 'running'],
    [[job('passed'), job('failed')], 'finished'],
    [[job('unblocked', false, 'manual')], 'finished'],
    [[job('broken'), job('broken')], 'ignored'],
    [[job('canceled'), job('skipped')], 'canceled'],
  ] as const)('%j is %s', (jobs, state) => {
    expect(stepState(jobs)).toBe(state);
  });

  it.each([
    [[job('passed'), job('passed')], 'passed'],
    [[job('passed'), job('failed')], 'hard_failed'],
    [[job('failed', true), job('passed')], 'soft_failed'],
    [[job('timed_out'), job('passed')], 'errored'],
    [[job('canceled')], 'errored'],
    [[job('expired')], 'errored'],
    [[job('failed'), job('timed_out')], 'hard_failed'],
    [[job('passed', false, 'waiter')], 'neutral'],
    [[job('broken')], 'neutral'],
  ] as const)('%j ends %s', (jobs, outcome) => {
    expect(stepOutcome(jobs)).toBe(outcome);
  });
});

describeEachDatabase('step get state and outcome', (ctx) => {
  it("answers the step's own state and outcome over every shard of a parallel step", async () => {
    const s = await givenBuildAndAgent(
      ctx(),
      'steps:\n  - command: shard\n    key: shards\n    parallelism: 2\n  - wait: ~\n    continue_on_failure: true\n  - command: report\n',
    );
    const second = await givenAgent(ctx(), s.reg, 'second');
    const [a, b] = [await takeNextJob(ctx(), s.agent), await takeNextJob(ctx(), second)];
    const get = async (attribute: string, token: string) =>
      (await ctx().http().post('/v3/steps/shards/export').set(agentAuth(token)).send({ attribute, build_id: s.build.id }).expect(200)).body.output;
    expect([await get('state', s.agent.token), await get('outcome', s.agent.token)]).toEqual(['running', 'neutral']);
    await ctx().http().put(`/v3/jobs/${a.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: '1' }).expect(200);
    // One shard failed, the other still runs: the step is failing, whichever shard was last.
    expect(await get('state', second.token)).toBe('failing');
    await ctx().http().put(`/v3/jobs/${b.id}/finish`).set(agentAuth(second.token)).send({ exit_status: '0' }).expect(200);
    const reporter = await takeNextJob(ctx(), s.agent);
    expect(reporter.command).toBe('report');
    expect([await get('state', s.agent.token), await get('outcome', s.agent.token)]).toEqual(['finished', 'hard_failed']);
    // `step get --format json` with no attribute: the whole step.
    const whole = (await ctx().http().post('/v3/steps/shards/export').set(agentAuth(s.agent.token)).send({ format: 'json' }).expect(200)).body.output;
    expect(JSON.parse(whole)).toMatchObject({ key: 'shards', type: 'script', command: 'shard', state: 'finished', outcome: 'hard_failed' });
  });
});
