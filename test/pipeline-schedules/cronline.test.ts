/** The cronline forms of the scheduled builds docs, through croner: next occurrences and refusals. */
import { parseCronline } from '../../src/pipeline-schedules/cronline';

const from = new Date('2024-01-01T12:00:00Z'); // a Monday
const next = (c: string) => parseCronline(c).nextAfter(from)?.toISOString();

describe('cronline', () => {
  it.each([
    ['@hourly', '2024-01-01T13:00:00.000Z'],
    ['@daily', '2024-01-02T00:00:00.000Z'],
    ['@midnight', '2024-01-02T00:00:00.000Z'],
    ['@weekly', '2024-01-07T00:00:00.000Z'],
    ['@monthly', '2024-02-01T00:00:00.000Z'],
    ['@yearly', '2025-01-01T00:00:00.000Z'],
    ['*/10 * * * *', '2024-01-01T12:10:00.000Z'],
    ['0 */4 * * *', '2024-01-01T16:00:00.000Z'],
    ['0 8 * * * America/Vancouver', '2024-01-01T16:00:00.000Z'],
    ['0 0 */2 * * +01:00', '2024-01-02T23:00:00.000Z'],
    ['0 0 * * * -05:00', '2024-01-02T05:00:00.000Z'],
    ['0 16 * * SUN', '2024-01-07T16:00:00.000Z'],
    ['0 0 * * 1-5', '2024-01-02T00:00:00.000Z'],
    ['0 0 L * *', '2024-01-31T00:00:00.000Z'],
    ['0 16 last * *', '2024-01-31T16:00:00.000Z'],
    // The docs' extensions (Fugit's): days from the month's end, and the day of week's modulo.
    ['0 0 -2-L * *', '2024-01-30T00:00:00.000Z'],
    ['0 0 -1 2 *', '2024-02-29T00:00:00.000Z'],
    ['0 0 1,-1 * *', '2024-01-31T00:00:00.000Z'],
    // rweek: 2019-01-01 is week 1, so 2024-01-02 (a Tuesday) and 2024-01-07 (a Sunday) are in week
    // 262, 2024-01-09 and -14 in 263, 2024-01-21 in 264.
    ['0 0 * * 0%3', '2024-01-21T00:00:00.000Z'],
    ['0 0 * * 0%3+1', '2024-01-14T00:00:00.000Z'],
    ['0 0 * * SUN%2', '2024-01-07T00:00:00.000Z'],
    ['0 0 * * 2%2+1', '2024-01-09T00:00:00.000Z'],
    ['30 9 * * 1%2,5 Europe/Berlin', '2024-01-05T08:30:00.000Z'],
    ['0 0 -1 * 1%4 +09:00', '2024-01-21T15:00:00.000Z'],
  ])('%s fires next at %s', (cronline, expected) => {
    expect(next(cronline)).toBe(expected);
  });

  it('the next occurrence is strictly after the instant given', () => {
    expect(parseCronline('0 12 * * *').nextAfter(new Date('2024-01-01T12:00:00Z'))?.toISOString()).toBe('2024-01-02T12:00:00.000Z');
    expect(parseCronline('0 12 -1 * *').nextAfter(new Date('2024-01-31T12:00:00Z'))?.toISOString()).toBe('2024-02-29T12:00:00.000Z');
  });

  it('matches Fugit’s README on the modulo (rweek of 2019-01-01 is 1, of 2019-01-08 is 2)', () => {
    const at = (c: string, from: string) => parseCronline(c).nextAfter(new Date(from))?.toISOString();
    expect(at('0 0 * * tue%2', '2018-12-31T00:00:00Z')).toBe('2019-01-08T00:00:00.000Z');
    expect(at('0 0 * * tue%2+1', '2018-12-31T00:00:00Z')).toBe('2019-01-01T00:00:00.000Z');
  });

  it('finds every minute of the last day, and a rare modulo, without giving up', () => {
    expect(parseCronline('* * -1 * *').nextAfter(new Date('2024-03-01T00:00:00Z'))?.toISOString()).toBe('2024-03-31T00:00:00.000Z');
    expect(parseCronline('* * * * 0%52').nextAfter(new Date('2024-01-01T00:00:00Z'))?.toISOString()).toMatch(/^2024-1[0-2]-/);
    expect(parseCronline('* * * * 0%260').nextAfter(new Date('2024-01-01T00:00:00Z'))).not.toBeNull();
  });

  it.each([
    ['every minute', 'not a cron'],
    ['0 ~ * * *', 'not a valid cron expression'],
    ['61 * * * *', 'not a valid cron expression'],
    ['0 0 * * * Mars/Olympus', 'unknown time zone'],
    ['0 0 31 2 *', 'never fires'],
    ['0 0 -32 * *', 'not a value from 1 to 31'],
    ['0 0 * * 0%0', 'not a value from 1'],
    ['0 0 * * 8%2', 'not a value from 0 to 7'],
    ['0 0 * * 0%261', 'not a value from 1 to 260'],
    ['0 0 -30 2 *', 'never fires'],
    ['0 0 * * * * *', 'five crontab fields'],
    ['@sometimes', 'not a valid cron expression'],
  ])('%s is refused (%s)', (cronline, reason) => {
    expect(() => parseCronline(cronline)).toThrow(new RegExp(reason === 'not a cron' ? 'five crontab fields' : reason.replace(/[()]/g, '\\$&')));
  });
});
