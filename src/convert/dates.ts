/**
 * Wire dates (`YYYYMMDD`) and timestamps (`YYYYMMDDTHHMMSSZ`) to epoch numbers and back, by arithmetic on
 * the digits: no `Date` parsing, so no local time zone can ever shift a value, and no allocation per value.
 * Days-from-civil is Howard Hinnant's algorithm (proleptic Gregorian, valid for every 4-digit year).
 */

const MS_PER_DAY = 86_400_000;

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

function daysInMonth(y: number, m: number): number {
  return m === 2 ? (isLeap(y) ? 29 : 28) : m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

/** Days since 1970-01-01 of a valid civil date (month 1-12). */
export function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Inverse of `daysFromCivil`. */
export function civilFromDays(z: number): [year: number, month: number, day: number] {
  z += 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp + (mp < 10 ? 3 : -9);
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

/** The number of `s.charCodeAt(i..i+n)` as decimal digits, or -1 when any is not a digit. */
function digits(s: string, i: number, n: number): number {
  let v = 0;
  for (let k = i; k < i + n; k++) {
    const c = s.charCodeAt(k) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

function dateDigits(s: string): number {
  const y = digits(s, 0, 4);
  const m = digits(s, 4, 2);
  const d = digits(s, 6, 2);
  if (y < 0 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return Number.NaN;
  return daysFromCivil(y, m, d);
}

/** The number of `bytes[i..i+n)` as decimal digits, or -1 when any is not a digit. */
function byteDigits(bytes: Uint8Array, i: number, n: number): number {
  let v = 0;
  for (let k = i; k < i + n; k++) {
    const c = bytes[k]! - 48;
    if (!(c >= 0 && c <= 9)) return -1;
    v = v * 10 + c;
  }
  return v;
}

/**
 * The date whose 8 digits `YYYYMMDD` start at `bytes[at]` → days since the epoch; NaN when they are not
 * digits or not a real calendar date. The byte-level twin of `parseDateDays` (same checks, same result).
 */
export function dateDaysAt(bytes: Uint8Array, at: number): number {
  const y = byteDigits(bytes, at, 4);
  const m = byteDigits(bytes, at + 4, 2);
  const d = byteDigits(bytes, at + 6, 2);
  if (y < 0 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return Number.NaN;
  return daysFromCivil(y, m, d);
}

/** `HHMMSS` at `bytes[at]` → ms into the day; NaN when invalid (as `parseTimestampMs`). */
export function timeOfDayMsAt(bytes: Uint8Array, at: number): number {
  const hh = byteDigits(bytes, at, 2);
  const mm = byteDigits(bytes, at + 2, 2);
  const ss = byteDigits(bytes, at + 4, 2);
  if (hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 59) return Number.NaN;
  return ((hh * 60 + mm) * 60 + ss) * 1000;
}

/**
 * `YYYYMMDD` (or `YYYYMMDDT000000Z`, which some endpoints send for dates) → days since the epoch;
 * NaN when the text is not a real calendar date (`20241345`, `20230229`, wrong length).
 */
export function parseDateDays(s: string): number {
  if (s.length === 8) return dateDigits(s);
  if (s.length === 16 && s.endsWith('T000000Z')) return dateDigits(s);
  return Number.NaN;
}

/** `YYYYMMDDTHHMMSSZ` (or a bare `YYYYMMDD`, midnight) → ms since the epoch, UTC; NaN when invalid. */
export function parseTimestampMs(s: string): number {
  if (s.length === 8) return dateDigits(s) * MS_PER_DAY;
  if (s.length !== 16 || s.charCodeAt(8) !== 84 /* T */ || s.charCodeAt(15) !== 90 /* Z */) return Number.NaN;
  const days = dateDigits(s);
  const hh = digits(s, 9, 2);
  const mm = digits(s, 11, 2);
  const ss = digits(s, 13, 2);
  if (Number.isNaN(days) || hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 59) return Number.NaN;
  return days * MS_PER_DAY + ((hh * 60 + mm) * 60 + ss) * 1000;
}

function pad(n: number, w: number): string {
  return String(n).padStart(w, '0');
}

/** Days since the epoch → `YYYYMMDD`. */
export function formatDateDays(days: number): string {
  const [y, m, d] = civilFromDays(days);
  return `${pad(y, 4)}${pad(m, 2)}${pad(d, 2)}`;
}

/** Ms since the epoch → days since the epoch and the time of day, UTC (sub-second part dropped). */
function splitMs(ms: number): [days: number, hh: string, mm: string, ss: string] {
  const days = Math.floor(ms / MS_PER_DAY);
  let rest = Math.floor((ms - days * MS_PER_DAY) / 1000);
  const ss = rest % 60;
  rest = (rest - ss) / 60;
  const mm = rest % 60;
  const hh = (rest - mm) / 60;
  return [days, pad(hh, 2), pad(mm, 2), pad(ss, 2)];
}

/** Ms since the epoch → `YYYYMMDDTHHMMSSZ` (sub-second part dropped, as the wire has none). */
export function formatTimestampMs(ms: number): string {
  const [days, hh, mm, ss] = splitMs(ms);
  return `${formatDateDays(days)}T${hh}${mm}${ss}Z`;
}

/** Days since the epoch → ISO 8601 `YYYY-MM-DD` (the `dates: 'string'` spelling of a date). */
export function isoDate(days: number): string {
  const [y, m, d] = civilFromDays(days);
  return `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`;
}

/** Ms since the epoch → ISO 8601 in UTC, `YYYY-MM-DDTHH:MM:SSZ` (the wire has no sub-seconds). */
export function isoTimestamp(ms: number): string {
  const [days, hh, mm, ss] = splitMs(ms);
  return `${isoDate(days)}T${hh}:${mm}:${ss}Z`;
}
