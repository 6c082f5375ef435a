/**
 * A fault test whose prerequisite is missing (initdb/pg_ctl for the Postgres outage) fails under
 * CI=true and is skipped with a warning elsewhere (issue 14 item 5).
 */
import { whenMissing } from './support';

describe('fault test prerequisites', () => {
  it('runs when nothing is missing, CI or not', () => {
    expect(whenMissing(undefined, { CI: 'true' })).toBe('run');
    expect(whenMissing(undefined, {})).toBe('run');
  });

  it('fails under CI=true when a prerequisite is missing', () => {
    expect(whenMissing('initdb', { CI: 'true' })).toBe('fail');
  });

  it('skips (with a warning) when CI is not set or not "true"', () => {
    expect(whenMissing('initdb', {})).toBe('skip');
    expect(whenMissing('initdb', { CI: 'false' })).toBe('skip');
  });
});
