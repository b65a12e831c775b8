import type { WireValue } from '../../core/wire.js';
import { mix32, type Rng } from '../random.js';
import {
  ALL_FORMATS,
  type DatasetDefinition,
  dayText,
  END_DAY,
  field,
  type RowContext,
  roundTo,
  tickerField,
} from './dataset.js';

const TWO_POW_32 = 4_294_967_296;

export const webTraffic: DatasetDefinition = {
  id: 'web_traffic',
  displayName: 'Web Traffic',
  summary: 'Daily visits to company websites, estimated from a panel.',
  blogUrl: 'https://media.example.com/blog/web-traffic-dataset',
  salt: 0x57454254,
  formats: ALL_FORMATS,
  lastDateUpdated: '2025-01-01T03:30:00Z',
  // biome-ignore format: one descriptor per line
  fields: [
    tickerField(),
    field('domain', 'Domain', 'string', 'Web domain measured.', { length: 253 }),
    field('date', 'Date', 'date', 'Day measured (UTC).'),
    field('visits', 'Visits', 'number', 'Visits that day.', { metric: true }),
    field('unique_visitors', 'Unique Visitors', 'number', 'Distinct visitors that day.', { metric: true }),
    field('bounce_rate', 'Bounce Rate', 'number', 'Share of single-page visits, 0 to 1.', { metric: true }),
    field('avg_session_seconds', 'Average Session (s)', 'number', 'Mean visit duration in seconds.', { metric: true }),
    field('total_bytes', 'Total Bytes', 'number', 'Bytes served that day; integers up to 2^53 - 1.', { metric: true }),
    field('is_estimate', 'Estimated', 'boolean', 'Whether the day is a provisional estimate.'),
  ],

  // Private companies are outside the measurement panel.
  includes: (company) => !company.entry.id.startsWith('private:'),

  rowCount(company, rng) {
    const [low, high] = company.size === 3 ? [2200, 3000] : company.size === 2 ? [1500, 2500] : [1000, 1600];
    return rng.int(low, high);
  },

  row(ctx: RowContext, rng: Rng): WireValue[] {
    const { company } = ctx;
    // Consecutive days ending on END_DAY: row i is day i of the window.
    const day = END_DAY - ctx.count + 1 + ctx.index;
    const scale = company.size === 3 ? 2_000_000 : company.size === 2 ? 400_000 : 50_000;
    const companyFactor = 0.5 + mix32(ctx.companyKey) / TWO_POW_32;
    const weekday = (day + 4) % 7; // 1970-01-01 was a Thursday; 0 = Sunday
    const weekFactor = weekday === 0 || weekday === 6 ? 0.8 : 1;
    const visits = Math.round(scale * companyFactor * weekFactor * (0.85 + 0.3 * rng.float()));
    const unique = Math.round(visits * (0.55 + 0.3 * rng.float()));

    // Mostly realistic volumes, sometimes huge ones near (and exactly at) the largest safe integer, so
    // decoders are exercised at the edge of float64 integer precision.
    const roll = rng.float();
    const totalBytes =
      roll < 0.015
        ? Number.MAX_SAFE_INTEGER
        : roll < 0.035
          ? rng.int(0x100000, 0x1fffff) * TWO_POW_32 + rng.next()
          : visits * rng.int(200_000, 5_000_000);

    return [
      company.entry.id,
      company.domain,
      dayText(day),
      visits,
      unique,
      roundTo(0.25 + 0.5 * rng.float(), 4),
      roundTo(60 + 300 * rng.float(), 2),
      totalBytes,
      END_DAY - day < 30 || rng.chance(0.03),
    ];
  },
};
