/**
 * Validation messages are the service's own words (issue 12 item 6): whatever is wrong in a
 * query or a body, on any operation of the spec, the answer never carries the validator's (Ajv's)
 * wording such as `must be integer,string`, `must NOT have more than`, `must match format`.
 */
import { readableReason } from '../../src/core/schema-messages';
import { auth, describeEachDatabase } from '../support/context';
import {
  agentAuth,
  BODIES,
  fillPath,
  givenTenant,
  propertiesOf,
  specOperations,
  suiteAuth,
  type Tenant,
  TENANT_SETUP_MS,
} from '../reliability/spec-operations';

const AJV_WORDING =
  /must be (integer|string|number|boolean|object|array|null)\b|must NOT have|must match (format|exactly|a schema)|must be equal to one of|must be [<>]=? |property name must be valid|must have required property/;

describe('readableReason', () => {
  it('rewrites each Ajv message it is given', () => {
    const cases: [string, string | undefined, string][] = [
      ['must be integer,string', undefined, 'must be a whole number or a string'],
      ['must be boolean', undefined, 'must be true or false'],
      ['must NOT have more than 255 characters', undefined, 'is too long (maximum is 255 characters)'],
      ['must NOT have fewer than 1 characters', undefined, "can't be blank"],
      ['must NOT have fewer than 3 characters', undefined, 'is too short (minimum is 3 characters)'],
      ['must NOT have more than 50 items', undefined, 'has too many items (maximum is 50)'],
      ['must NOT have more than 10 properties', undefined, 'has too many keys (maximum is 10)'],
      ['must be >= 1', undefined, 'must be at least 1'],
      ['must be <= 100', undefined, 'must be at most 100'],
      ['must match format "uuid"', undefined, 'must be a UUID'],
      ['must be equal to one of the allowed values: a, b', 'enum.openapi.validation', 'is not included in the list (a, b)'],
      ["must have required property 'name'", 'required.openapi.validation', "can't be blank"],
    ];
    for (const [message, code, expected] of cases) expect(readableReason(message, code)).toBe(expected);
  });
});

const operations = specOperations();
const writes = operations.filter((op) => op.requestSchema && ['post', 'put', 'patch'].includes(op.method));
const reads = operations.filter((op) => op.method === 'get' && op.auth === 'bearer');

describeEachDatabase('validation messages', (ctx) => {
  let t: Tenant;

  beforeAll(async () => {
    t = await givenTenant(ctx(), 'messages');
  }, TENANT_SETUP_MS);

  it('words every body refusal of every write operation in its own terms', async () => {
    let refusals = 0;
    for (const op of writes) {
      const fixture = BODIES[op.operationId]!(t) as Record<string, unknown>;
      for (const name of Object.keys(propertiesOf(op.requestSchema!))) {
        for (const wrong of [[[1]], { x: { y: 1 } }, 'x'.repeat(70000), -1]) {
          const path = fillPath(op, t.params);
          const credential =
            op.auth === 'suiteToken'
              ? suiteAuth(t.suiteToken)
              : op.auth === 'agentToken'
                ? agentAuth(op.operationId === 'registerAgent' ? t.agentRegistrationToken : t.agent.token)
                : auth(t.token);
          const res = await ctx()
            .http()
            [op.method](path)
            .set(credential)
            .send({ ...fixture, [name]: wrong });
          if (res.status !== 422 && res.status !== 400) continue;
          refusals++;
          const words = [res.body.message, ...((res.body.errors as { code: string }[] | undefined) ?? []).map((e) => e.code)].join(' | ');
          expect({ op: op.operationId, name, words: AJV_WORDING.test(words) ? words : 'ours' }).toEqual({ op: op.operationId, name, words: 'ours' });
        }
      }
    }
    expect(refusals).toBeGreaterThan(50);
    // Four wrong values for every field of every write operation: thousands of requests.
  }, 300_000);

  it('words every query refusal of every read operation in its own terms', async () => {
    let refusals = 0;
    for (const op of reads) {
      const path = fillPath(op, t.params);
      for (const query of [
        'page=x',
        'per_page=1000',
        'state=nope',
        'state[]=nope',
        'branch[a]=b',
        `branch=${'b'.repeat(300)}`,
        'creator=nope',
        'created_from=nope',
        'include_retried_jobs=maybe',
        'exclude_jobs=1',
        'period=never',
        'meta_data=x',
        `name=${'n'.repeat(300)}`,
      ]) {
        const res = await ctx().http().get(`${path}?${query}`).set(auth(t.token));
        if (res.status !== 400) continue;
        refusals++;
        expect({ op: op.operationId, query, message: AJV_WORDING.test(res.body.message) ? res.body.message : 'ours' }).toEqual({
          op: op.operationId,
          query,
          message: 'ours',
        });
        expect(res.body.message).toMatch(/^Invalid parameter [a-z_]+: /);
      }
    }
    expect(refusals).toBeGreaterThan(20);
  }, 300_000);
});
