/**
 * The service's clock (WINDSOCK_CLOCK, src/core/clock.ts) dates what clients see: frozen, a new
 * build, its jobs, its pipeline and the token that made it are dated at the frozen instant; an
 * offset shifts them by the offset.
 */
import { clock } from '../../src/core/clock';
import { parseClockMode } from '../../src/config';
import { auth, describeEachDatabase } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';

describeEachDatabase('the clock dates what clients see', (ctx) => {
  afterEach(() => clock.set({ kind: 'real' }));

  it('frozen: a created build, its jobs and its pipeline are dated at the frozen instant', async () => {
    clock.set(parseClockMode('2030-06-01T12:00:00Z'));
    const { org, token } = await ctx().givenAdmin();
    const pipeline = await givenPipeline(ctx(), org, token);
    const build = await givenBuild(ctx(), org, pipeline, token);
    expect(pipeline.created_at).toBe('2030-06-01T12:00:00.000Z');
    expect(build.created_at).toBe('2030-06-01T12:00:00.000Z');
    expect(build.scheduled_at).toBe('2030-06-01T12:00:00.000Z');
    expect(build.jobs.map((j) => j.created_at)).toEqual(build.jobs.map(() => '2030-06-01T12:00:00.000Z'));
    // Read back from the store, not only the create answer.
    const read = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}/builds/${build.number}`).set(auth(token)).expect(200);
    expect(read.body.created_at).toBe('2030-06-01T12:00:00.000Z');

    // Moved on (as the test-control endpoint does): the next build is dated there.
    clock.advance(90_000);
    expect((await givenBuild(ctx(), org, pipeline, token)).created_at).toBe('2030-06-01T12:01:30.000Z');
  });

  it('offset: a created build is dated that far from real time', async () => {
    const { org, token } = await ctx().givenAdmin();
    const pipeline = await givenPipeline(ctx(), org, token);
    clock.set(parseClockMode('-2h'));
    const before = Date.now();
    const build = await givenBuild(ctx(), org, pipeline, token);
    const after = Date.now();
    const at = Date.parse(build.created_at);
    expect(at).toBeGreaterThanOrEqual(before - 7_200_000);
    expect(at).toBeLessThanOrEqual(after - 7_200_000);
  });

  it('a token expiring before the frozen instant is refused (expiry reads the clock)', async () => {
    const { user, org } = await ctx().givenAdmin();
    const token = await ctx().givenToken(user, [org], undefined, new Date('2030-01-01T00:00:00Z'));
    await ctx().http().get('/v2/access-token').set(auth(token)).expect(200);
    clock.set(parseClockMode('2030-01-02T00:00:00Z'));
    await ctx().http().get('/v2/access-token').set(auth(token)).expect(401);
  });
});
