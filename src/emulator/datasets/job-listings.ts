import type { WireValue } from '../../core/wire.js';
import type { Rng } from '../random.js';
import {
  ALL_FORMATS,
  civilDay,
  type DatasetDefinition,
  dayText,
  END_DAY,
  field,
  MS_PER_DAY,
  type RowContext,
  tickerField,
  timestampText,
} from './dataset.js';

const START_DAY = civilDay(2019, 1, 1);
const SPAN_DAYS = END_DAY - START_DAY + 1;

/** Roles per category. Some carry commas, quotes, non-ASCII text or emoji on purpose: encoders must cope. */
// biome-ignore format: table
const ROLES: readonly (readonly [category: string, roles: readonly string[], salary: readonly [number, number]])[] = [
  ['Engineering', ['Software Engineer', 'Site Reliability Engineer', 'Engineer, "Platform" Team', 'Backend Developer', 'Ingénieur Données – Zürich', 'Softwareentwickler (m/w/d)', 'データエンジニア', 'Machine Learning Engineer, Ads'], [90_000, 210_000]],
  ['Data & Analytics', ['Data Scientist', 'Analytics Engineer', 'Data Analyst, Supply Chain', 'Business Intelligence Developer'], [75_000, 170_000]],
  ['Retail', ['Store Associate', 'Shift Supervisor', 'Barista ☕', 'Cashier – Part Time', 'Assistant Store Manager', 'Visual Merchandiser'], [25_000, 60_000]],
  ['Sales', ['Account Executive, Enterprise', 'Sales Development Representative', 'Vendedor/a – São Paulo', 'Key Account Manager'], [45_000, 140_000]],
  ['Operations', ['Warehouse Associate', 'Delivery Driver 🚚', 'Operations Manager', 'Forklift Operator (Nights)', 'Logistics Coordinator'], [32_000, 95_000]],
  ['Marketing', ['Brand Manager', 'Growth Marketing Lead', 'Social Media "Storyteller"', 'Content Strategist'], [55_000, 150_000]],
  ['Finance', ['Financial Analyst', 'Senior Accountant', 'Treasury Associate, EMEA', 'FP&A Manager'], [60_000, 160_000]],
  ['Customer Service', ['Customer Service Representative', 'Support Specialist (Bilingual Español/English)', 'Call Centre Agent'], [30_000, 55_000]],
  ['Design', ['Product Designer', 'UX Researcher', 'Designer Graphique – Paris'], [65_000, 160_000]],
  ['Human Resources', ['Recruiter', 'HR Business Partner', 'People Operations Coordinator'], [50_000, 120_000]],
  ['Legal', ['Corporate Counsel', 'Paralegal', 'Privacy Counsel, Data Protection'], [70_000, 220_000]],
];

const LEVELS = ['Senior ', 'Junior ', 'Lead ', 'Principal ', 'Staff '];

// biome-ignore format: list
const LOCATIONS = [
  'Austin, TX', 'New York, NY', 'San Francisco, CA', 'Seattle, WA', 'Chicago, IL', 'Atlanta, GA', 'Denver, CO',
  'Toronto, ON', 'London, UK', 'Manchester, UK', 'Zürich, Switzerland', 'Berlin, Germany', 'Paris, France',
  'Tokyo, Japan', 'São Paulo, Brazil', 'Sydney, NSW', 'Bengaluru, India', 'Dublin, Ireland', 'Remote',
  'Remote (US)',
];

const DUTIES = [
  'Own projects end to end, from "why" to launch.',
  'Work with partners across product, design and operations.',
  'Keep our customers happy, safe and informed.',
  'Improve processes, tooling and documentation.',
  'Mentor colleagues and share what you learn.',
  'Analyse results and report to leadership, weekly.',
  'Travel up to 25% (domestic & international).',
];

export const jobListings: DatasetDefinition = {
  id: 'job_listings',
  displayName: 'Job Listings',
  summary: 'Job openings posted on company career sites, with posting and removal dates.',
  blogUrl: 'https://media.example.com/blog/job-listings-dataset',
  salt: 0x4a4f4253,
  formats: ALL_FORMATS,
  lastDateUpdated: '2025-01-01T06:00:00Z',
  // biome-ignore format: one descriptor per line
  fields: [
    tickerField(),
    field('entity_id', 'Entity', 'string', 'Brand or subsidiary that posted the job, <entity>@<ticker>.', { length: 128 }),
    field('title', 'Title', 'string', 'Job title as posted.', { length: 512 }),
    field('category', 'Category', 'string', 'Job function, normalised.', { length: 64 }),
    field('location', 'Location', 'string', 'Place of work as posted, e.g. "Austin, TX".'),
    field('posted_date', 'Date Posted', 'date', 'Day the listing was first seen.'),
    field('removed_date', 'Date Removed', 'date', 'Day the listing disappeared; null while still listed.'),
    field('salary_min', 'Salary Min', 'number', 'Lower end of the advertised yearly salary; null when not advertised.', { metric: true }),
    field('salary_max', 'Salary Max', 'number', 'Upper end of the advertised yearly salary; null when not advertised.', { metric: true }),
    field('remote', 'Remote', 'boolean', 'Whether the job can be done remotely; null when the listing does not say.'),
    field('url', 'URL', 'string', 'Address of the listing; empty or null when unknown.', { length: 2048 }),
    field('description', 'Description', 'string', 'Listing text, several lines.', { length: 8192 }),
    field('last_seen', 'Last Seen', 'datetime', 'When the crawler last saw the listing.'),
  ],

  includes: () => true,

  rowCount(company, rng) {
    const base = company.size === 3 ? 17_500 : company.size === 2 ? 12_500 : 6_000;
    return Math.floor(base * (0.9 + 0.2 * rng.float()));
  },

  row(ctx: RowContext, rng: Rng): WireValue[] {
    const { company } = ctx;
    // Monotone in the index, so a company's rows come in posting order; with count > SPAN_DAYS every day
    // (20240229 included) has listings.
    const posted = START_DAY + Math.floor((ctx.index * SPAN_DAYS) / ctx.count);
    const entity =
      company.entry.entities[rng.chance(0.7) ? 0 : rng.int(0, company.entry.entities.length - 1)]!;
    const [category, roles, [low, high]] = rng.pick(ROLES);
    const role = rng.pick(roles);
    const title = rng.chance(0.3) ? rng.pick(LEVELS) + role : role;
    const location = rng.pick(LOCATIONS);

    let removed: number | null = null;
    if (!rng.chance(0.4)) {
      const day = posted + rng.int(1, 120);
      removed = day <= END_DAY ? day : null;
    }

    let salaryMin: number | null = null;
    let salaryMax: number | null = null;
    if (rng.chance(0.7)) {
      salaryMin = Math.round(rng.int(low, high) / 1000) * 1000;
      salaryMax = rng.chance(0.9) ? salaryMin + rng.int(5, 80) * 1000 : null;
    }

    const remote = rng.chance(0.1) ? null : rng.chance(0.25);
    const jobId = rng.next().toString(36);
    const urlRoll = rng.float();
    const url =
      urlRoll < 0.1 ? null : urlRoll < 0.18 ? '' : `https://careers.${company.domain}/jobs/${jobId}`;

    const duty = rng.int(0, DUTIES.length - 1);
    const otherDuty = (duty + rng.int(1, DUTIES.length - 1)) % DUTIES.length;
    const eol = rng.chance(0.05) ? '\r\n' : '\n';
    const description =
      `About the role${eol}We are hiring a ${title} in ${location} to join the ${category} team at ` +
      `${entity.display_name}.${eol}${eol}What you'll do:${eol}- ${DUTIES[duty]}${eol}- ${DUTIES[otherDuty]}`;

    const lastSeenDay = removed ?? Math.min(posted + rng.int(0, 90), END_DAY);
    const lastSeen = lastSeenDay * MS_PER_DAY + rng.int(0, 86_399) * 1000;

    return [
      company.entry.id,
      entity.id,
      title,
      category,
      location,
      dayText(posted),
      removed === null ? null : dayText(removed),
      salaryMin,
      salaryMax,
      remote,
      url,
      description,
      timestampText(lastSeen),
    ];
  },
};
