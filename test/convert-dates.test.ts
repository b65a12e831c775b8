import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  civilFromDays,
  daysFromCivil,
  formatDateDays,
  formatTimestampMs,
  parseDateDays,
  parseTimestampMs,
} from '../src/convert/dates.js';

const DAY = 86_400_000;

describe('wire dates', () => {
  it('reads YYYYMMDD as days since the epoch, on both sides of 1970', () => {
    expect(parseDateDays('19700101')).toBe(0);
    expect(parseDateDays('19691231')).toBe(-1);
    expect(parseDateDays('20240229')).toBe(Date.UTC(2024, 1, 29) / DAY);
    // Date.UTC maps years 0-99 to 19xx; setUTCFullYear does not. Both count proleptic Gregorian days.
    expect(parseDateDays('00010101')).toBe(new Date(0).setUTCFullYear(1, 0, 1) / DAY);
    expect(parseDateDays('99991231')).toBe(Date.UTC(9999, 11, 31) / DAY);
  });

  it('knows leap years: every 4, not every 100, every 400', () => {
    expect(parseDateDays('20240229')).not.toBeNaN();
    expect(parseDateDays('20000229')).not.toBeNaN();
    expect(parseDateDays('19000229')).toBeNaN();
    expect(parseDateDays('20230229')).toBeNaN();
    expect(parseDateDays('21000229')).toBeNaN();
  });

  it.each([
    '20241345',
    '20241301',
    '20240001',
    '20240100',
    '20240132',
    '20240431',
    '20230229',
    '2024022',
    '202402290',
    'abc',
    '',
    '2024-02-29',
    '2024022a',
    '20240229T120000Z',
    '20240229T000000',
    '+2024022',
    ' 20240229',
  ])('rejects %j as a date', (s) => {
    expect(parseDateDays(s)).toBeNaN();
  });

  it('accepts the midnight timestamp spelling of a date', () => {
    expect(parseDateDays('20240229T000000Z')).toBe(parseDateDays('20240229'));
  });

  it('agrees with Date.UTC on random real dates', () => {
    fc.assert(
      fc.property(fc.integer({ min: -719_162, max: 2_932_896 }), (days) => {
        const d = new Date(days * DAY);
        const text = d.toISOString().slice(0, 10).replaceAll('-', '');
        expect(parseDateDays(text)).toBe(days);
        expect(formatDateDays(days)).toBe(text);
        const [y, m, dd] = civilFromDays(days);
        expect(daysFromCivil(y, m, dd)).toBe(days);
      }),
    );
  });
});

describe('wire timestamps', () => {
  it('reads YYYYMMDDTHHMMSSZ as UTC milliseconds', () => {
    expect(parseTimestampMs('20240229T123456Z')).toBe(Date.UTC(2024, 1, 29, 12, 34, 56));
    expect(parseTimestampMs('19691231T235959Z')).toBe(-1000);
    expect(parseTimestampMs('19700101T000000Z')).toBe(0);
    expect(parseTimestampMs('20240229')).toBe(Date.UTC(2024, 1, 29));
  });

  it.each([
    '20240229T240000Z',
    '20240229T236000Z',
    '20240229T235960Z',
    '20230229T000000Z',
    '20240229T123456',
    '20240229 123456Z',
    '20240229T12345Z',
    '20240229T1234567Z',
    '2024-02-29T12:34:56Z',
    'abc',
    '',
  ])('rejects %j as a timestamp', (s) => {
    expect(parseTimestampMs(s)).toBeNaN();
  });

  it('round-trips through formatTimestampMs', () => {
    fc.assert(
      fc.property(fc.integer({ min: -2_208_988_800, max: 4_102_444_799 }), (seconds) => {
        const ms = seconds * 1000;
        expect(parseTimestampMs(formatTimestampMs(ms))).toBe(ms);
        expect(formatTimestampMs(ms)).toBe(
          `${new Date(ms).toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`,
        );
      }),
    );
  });
});
