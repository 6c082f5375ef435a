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
  ])('%s fires next at %s', (cronline, expected) => {
    expect(next(cronline)).toBe(expected);
  });

  it('the next occurrence is strictly after the instant given', () => {
    expect(parseCronline('0 12 * * *').nextAfter(new Date('2024-01-01T12:00:00Z'))?.toISOString()).toBe('2024-01-02T12:00:00.000Z');
  });

  it.each([
    ['every minute', 'not a cron'],
    ['0 ~ * * *', 'not a valid cron expression'],
    ['61 * * * *', 'not a valid cron expression'],
    ['0 0 * * * Mars/Olympus', 'unknown time zone'],
    ['0 0 31 2 *', 'never fires'],
    ['0 0 * * 2%2+1', 'modulo'],
    ['0 0 * * * * *', 'five crontab fields'],
    ['@sometimes', 'not a valid cron expression'],
  ])('%s is refused (%s)', (cronline, reason) => {
    expect(() => parseCronline(cronline)).toThrow(new RegExp(reason === 'not a cron' ? 'five crontab fields' : reason.replace(/[()]/g, '\\$&')));
  });
});
