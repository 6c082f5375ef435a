/**
 * A 422 with field errors, worded as each area's docs word it: clusters, teams, pipeline
 * schedules and pipeline templates give one sentence of full messages (`{ "message": "Validation
 * failed: Reason for failure" }`), with the field errors beside it; pipelines and builds keep
 * `Validation Failed` with `errors`, as their docs show.
 */
import { auth, describeEachDatabase } from '../support/context';
import { givenPipeline } from '../support/given';

describeEachDatabase('422 messages by area', (ctx) => {
  it("answers clusters', teams', schedules' and templates' field errors as one sentence, and pipelines' as Validation Failed", async () => {
    const { org, token } = await ctx().givenAdmin();
    const api = `/v2/organizations/${org.slug}`;
    const cluster = await ctx().http().post(`${api}/clusters`).set(auth(token)).send({ name: ' ' });
    expect({ status: cluster.status, body: cluster.body }).toEqual({
      status: 422,
      body: { message: "Validation failed: Name can't be blank", errors: [{ field: 'name', code: "can't be blank" }] },
    });
    const created = (await ctx().http().post(`${api}/clusters`).set(auth(token)).send({ name: 'Real' }).expect(201)).body as { id: string };
    const queue = await ctx().http().put(`${api}/clusters/${created.id}`).set(auth(token)).send({ default_queue_id: '00000000-0000-4000-8000-000000000000' });
    expect({ status: queue.status, message: queue.body.message }).toEqual({
      status: 422,
      message: 'Validation failed: Default queue is not a queue of this cluster',
    });

    const team = await ctx().http().post(`${api}/teams`).set(auth(token)).send({ name: ' ' });
    expect({ status: team.status, message: team.body.message, fields: team.body.errors.map((e: { field: string }) => e.field) }).toEqual({
      status: 422,
      message: expect.stringMatching(/^Validation failed: Name /),
      fields: ['name'],
    });

    const template = await ctx().http().post(`${api}/pipeline-templates`).set(auth(token)).send({ name: ' ', configuration: ' ' });
    expect(template.status).toBe(422);
    expect(template.body.message).toMatch(/^Validation failed: (Name|Configuration) .+, (Name|Configuration) /);

    const pipeline = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: x\n');
    const schedule = await ctx()
      .http()
      .post(`${api}/pipelines/${pipeline.slug}/schedules`)
      .set(auth(token))
      .send({ cronline: '@daily', env: { 'NOT A NAME': 'x' } });
    expect(schedule.status).toBe(422);
    expect(schedule.body.message).toMatch(/^Validation failed: Env/);

    // Pipelines (and builds) keep their documented shape.
    const blank = await ctx().http().post(`${api}/pipelines`).set(auth(token)).send({ name: ' ', repository: 'x', configuration: 'steps: []' });
    expect(blank.status).toBe(422);
    expect(blank.body.message).toBe('Validation Failed');
  });
});
