import type { WireValue } from '../../core/wire.js';
import type { Rng } from '../random.js';
import {
  ALL_FORMATS,
  civilDay,
  type DatasetDefinition,
  END_DAY,
  field,
  MS_PER_DAY,
  type RowContext,
  tickerField,
  timestampText,
} from './dataset.js';

const FIRST_MS = civilDay(2021, 1, 1) * MS_PER_DAY;
const SPAN_SECONDS = ((END_DAY + 1) * MS_PER_DAY - FIRST_MS) / 1000;

interface Phrases {
  readonly good: readonly string[];
  readonly bad: readonly string[];
  readonly titles: readonly string[];
}

/** Review text in several scripts, with quotes, commas, emoji: exactly what breaks naive encoders. */
// biome-ignore format: table
const LANGUAGES: Readonly<Record<string, Phrases>> = {
  en: {
    good: ['Love it! 👍', 'Works great, fast and reliable.', 'Best app for "quick" orders, hands down.', 'Five stars ⭐⭐⭐⭐⭐', 'Does exactly what it says.'],
    bad: ['Keeps crashing after the update, please fix.', 'Login loop again... "Something went wrong"', 'Too many ads, uninstalling 👎', 'Slow, buggy, and the support never answers.'],
    titles: ['Great', 'Meh', 'Crashes', 'Finally!', 'Worth it', '"Updated" = broken'],
  },
  ja: {
    good: ['とても使いやすいです。', '毎日使っています 👍', '動作が速くて快適。'],
    bad: ['アップデート後に起動しません。', '日本語の表示がおかしい', 'ログインできない、何度も「エラー」'],
    titles: ['最高', '不具合', '便利'],
  },
  el: {
    good: ['Πολύ καλή εφαρμογή!', 'Γρήγορη, απλή, χρήσιμη.'],
    bad: ['Δεν λειτουργεί μετά την ενημέρωση.', 'Κολλάει συνέχεια, κρίμα.'],
    titles: ['Τέλεια', 'Πρόβλημα'],
  },
  fr: {
    good: ['Très pratique, je recommande.', 'Super appli, « simple » et efficace.'],
    bad: ["L'application plante à l'ouverture.", 'Trop de pubs, dommage.'],
    titles: ['Génial', 'Déçu'],
  },
  de: {
    good: ['Super App, läuft flüssig.', 'Übersichtlich und schnell.'],
    bad: ['Seit dem Update stürzt sie ständig ab.', 'Anmeldung schlägt fehl, „Fehler 500“.'],
    titles: ['Top', 'Schlecht'],
  },
  es: {
    good: ['¡Excelente! Muy fácil de usar.', 'Me encanta, la uso a diario.'],
    bad: ['No carga, siempre da error.', 'Pésima, se cierra sola.'],
    titles: ['Genial', 'Mala'],
  },
  ar: {
    good: ['تطبيق رائع وسهل الاستخدام'],
    bad: ['التطبيق لا يعمل بعد التحديث'],
    titles: ['ممتاز', 'سيء'],
  },
};

const LANGUAGE_CODES = Object.keys(LANGUAGES);
const SEPARATORS = [' ', '\n', '\n\n', ' ', ', '];

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '')
    .slice(0, 24);
}

function rating(rng: Rng): number {
  const roll = rng.float();
  return roll < 0.4 ? 5 : roll < 0.6 ? 4 : roll < 0.72 ? 3 : roll < 0.82 ? 2 : 1;
}

export const appReviews: DatasetDefinition = {
  id: 'app_reviews',
  displayName: 'App Reviews',
  summary: 'Ratings and reviews of company mobile apps from the app stores.',
  blogUrl: null,
  salt: 0x41505052,
  formats: ALL_FORMATS,
  lastDateUpdated: '2025-01-01T01:45:00Z',
  // biome-ignore format: one descriptor per line
  fields: [
    tickerField(),
    field('app_id', 'App ID', 'string', 'Store identifier of the app.', { length: 128 }),
    field('review_id', 'Review ID', 'string', 'Store identifier of the review.', { length: 64 }),
    field('rating', 'Rating', 'number', 'Stars given, 1 to 5.', { metric: true }),
    field('title', 'Title', 'string', 'Review title; may be empty.'),
    field('body', 'Review', 'string', 'Review text; empty or null when the reviewer wrote none.', { length: 4000 }),
    field('language', 'Language', 'string', 'ISO 639-1 code of the review text.', { length: 8 }),
    field('reviewed_at', 'Reviewed At', 'datetime', 'When the review was posted.'),
    field('app_version', 'App Version', 'string', 'App version the review is about.', { length: 32 }),
    field('helpful_count', 'Helpful', 'number', 'Readers who found the review helpful; null when unknown.', { metric: true }),
  ],

  includes: (company) => company.apps.length > 0,

  rowCount(company, rng) {
    const [low, high] = company.size === 3 ? [4000, 6000] : company.size === 2 ? [2500, 4500] : [1500, 2500];
    return rng.int(low, high);
  },

  row(ctx: RowContext, rng: Rng): WireValue[] {
    const { company } = ctx;
    const app = rng.pick(company.apps);
    // Strictly after the previous row: slot i covers [i, i+1) of the window, jittered inside the slot.
    const seconds = Math.floor(((ctx.index + rng.float()) * SPAN_SECONDS) / ctx.count);
    const stars = rating(rng);
    const language = rng.chance(0.55) ? 'en' : rng.pick(LANGUAGE_CODES);
    const phrases = LANGUAGES[language]!;
    const pool = stars >= 4 ? phrases.good : phrases.bad;

    const bodyRoll = rng.float();
    let body: string | null;
    if (bodyRoll < 0.04) body = null;
    else if (bodyRoll < 0.08) body = '';
    else {
      body = rng.pick(pool);
      for (let n = rng.int(0, 2); n > 0; n--) body += rng.pick(SEPARATORS) + rng.pick(pool);
    }

    const major = 1 + Math.floor((ctx.index * 6) / ctx.count);
    return [
      company.entry.id,
      `com.${slug(company.ident)}.${slug(app)}`,
      `${rng.next().toString(16).padStart(8, '0')}${ctx.index.toString(36)}`,
      stars,
      rng.chance(0.05) ? '' : rng.pick(phrases.titles),
      body,
      language,
      timestampText(FIRST_MS + seconds * 1000),
      `${major}.${rng.int(0, 20)}.${rng.int(0, 9)}`,
      rng.chance(0.15) ? null : Math.floor(rng.float() ** 3 * 500),
    ];
  },
};
