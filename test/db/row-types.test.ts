import { isOneOf, jsonColumn, oneOf } from '../../src/db/row-types';
import { isRecord, isStringArray, isStringRecord } from '../../src/core/guards';
import { everyValue } from '../../src/core/enum-values';

describe('checking reads of row values', () => {
  const STATES = everyValue<'enabled' | 'muted' | 'skipped'>()(['enabled', 'muted', 'skipped']);

  it('narrows an enum-like column to one of its values, and names the column of an unknown one', () => {
    expect(oneOf(STATES, 'muted', 'tests.state')).toBe('muted');
    expect(isOneOf(STATES, 'skipped')).toBe(true);
    expect(isOneOf(STATES, 'MUTED')).toBe(false);
    expect(isOneOf(STATES, null)).toBe(false);
    expect(() => oneOf(STATES, 'paused', 'tests.state')).toThrow(new TypeError('tests.state: "paused" is not one of enabled, muted, skipped'));
    expect(() => oneOf(STATES, 1, 'tests.state')).toThrow(TypeError);
  });

  it('lists every value of a union (a missing one is a compile error)', () => {
    expect(STATES).toEqual(['enabled', 'muted', 'skipped']);
    // @ts-expect-error 'skipped' is missing
    everyValue<'enabled' | 'muted' | 'skipped'>()(['enabled', 'muted']);
  });

  it('parses a JSON column as text or as the value a driver already parsed, checked', () => {
    expect(jsonColumn('["a","b"]', [], isStringArray, 'tests.labels')).toEqual(['a', 'b']);
    expect(jsonColumn(['c'], [], isStringArray, 'tests.labels')).toEqual(['c']);
    expect(jsonColumn('{"os":"linux"}', {}, isStringRecord, 'test_runs.tags')).toEqual({ os: 'linux' });
    expect(jsonColumn(null, ['fallback'], isStringArray, 'tests.labels')).toEqual(['fallback']);
    expect(jsonColumn(undefined, {}, isRecord, 'notification_services.settings')).toEqual({});
    expect(() => jsonColumn('[1,2]', [], isStringArray, 'tests.labels')).toThrow(new TypeError('tests.labels: unexpected JSON [1,2]'));
    expect(() => jsonColumn('{"os":1}', {}, isStringRecord, 'test_runs.tags')).toThrow(TypeError);
    expect(() => jsonColumn('not json', {}, isRecord, 'notification_services.settings')).toThrow(SyntaxError);
  });

  it('tells records from arrays and null', () => {
    expect(isRecord({})).toBe(true);
    expect(isRecord([])).toBe(false);
    expect(isRecord(null)).toBe(false);
    expect(isRecord('x')).toBe(false);
    expect(isStringRecord({ a: 'b' })).toBe(true);
    expect(isStringRecord({ a: true })).toBe(false);
    expect(isStringArray([])).toBe(true);
    expect(isStringArray(['a', 2])).toBe(false);
  });
});
