import type { WireValue } from '../../core/wire.js';
import type { Rng } from '../random.js';
import {
  civilDay,
  type DatasetDefinition,
  dayText,
  END_DAY,
  field,
  MS_PER_DAY,
  type RowContext,
  roundTo,
  tickerField,
  timestampText,
} from './dataset.js';

const FIRST_OPENING = civilDay(1985, 1, 1);
const LAST_OPENING = civilDay(2024, 6, 30);

type City = readonly [
  name: string,
  country: string,
  latitude: number,
  longitude: number,
  streets: readonly string[],
];

// Each city with streets of its own, so an address, its city and its country agree.
// biome-ignore format: table
const CITIES: readonly City[] = [
  ['New York', 'US', 40.7128, -74.006, ['Broadway', 'Madison Avenue', 'West 34th Street']],
  ['Los Angeles', 'US', 34.0522, -118.2437, ['Sunset Boulevard', 'Wilshire Boulevard', 'Figueroa Street']],
  ['Chicago', 'US', 41.8781, -87.6298, ['North Michigan Avenue', 'West Madison Street', 'State Street']],
  ['Houston', 'US', 29.7604, -95.3698, ['Westheimer Road', 'Main Street', 'Kirby Drive']],
  ['Austin', 'US', 30.2672, -97.7431, ['Congress Avenue', 'South Lamar Boulevard', 'Guadalupe Street']],
  ['Seattle', 'US', 47.6062, -122.3321, ['Pike Street', '1st Avenue', 'Rainier Avenue South']],
  ['Miami', 'US', 25.7617, -80.1918, ['Biscayne Boulevard', 'Collins Avenue', 'Brickell Avenue']],
  ['Denver', 'US', 39.7392, -104.9903, ['Colfax Avenue', '16th Street', 'South Broadway']],
  ['Boston', 'US', 42.3601, -71.0589, ['Boylston Street', 'Newbury Street', 'Washington Street']],
  ['Toronto', 'CA', 43.6532, -79.3832, ['King Street West', 'Yonge Street', 'Queen Street East']],
  ['Montréal', 'CA', 45.5019, -73.5674, ['Rue Sainte-Catherine Ouest', 'Boulevard Saint-Laurent', 'Rue Saint-Denis']],
  ['London', 'GB', 51.5072, -0.1276, ['Oxford Street', 'High Street Kensington', 'Regent Street']],
  ['Manchester', 'GB', 53.4808, -2.2426, ['Market Street', 'Deansgate', 'Oxford Road']],
  ['Edinburgh', 'GB', 55.9533, -3.1883, ['Princes Street', 'George Street', 'Leith Walk']],
  ['Zürich', 'CH', 47.3769, 8.5417, ['Bahnhofstrasse', 'Limmatquai', 'Langstrasse']],
  ['Genève', 'CH', 46.2044, 6.1432, ['Rue du Rhône', 'Rue de Lausanne', 'Boulevard Carl-Vogt']],
  ['München', 'DE', 48.1351, 11.582, ['Kaufingerstraße', 'Leopoldstraße', 'Sendlinger Straße']],
  ['Berlin', 'DE', 52.52, 13.405, ['Kurfürstendamm', 'Friedrichstraße', 'Karl-Marx-Allee']],
  ['Paris', 'FR', 48.8566, 2.3522, ['rue de Rivoli', 'boulevard Haussmann', 'avenue des Champs-Élysées']],
  ['Lyon', 'FR', 45.764, 4.8357, ['rue de la République', 'cours Lafayette', 'rue Victor Hugo']],
  ['Stockholm', 'SE', 59.3293, 18.0686, ['Drottninggatan', 'Götgatan', 'Hamngatan']],
  ['Göteborg', 'SE', 57.7089, 11.9746, ['Kungsgatan', 'Avenyn', 'Linnégatan']],
  ['Amsterdam', 'NL', 52.3676, 4.9041, ['Kalverstraat', 'Damrak', 'Ferdinand Bolstraat']],
  ['Tokyo', 'JP', 35.6762, 139.6503, ['銀座通り', '表参道', '新宿通り']],
  ['大阪市', 'JP', 34.6937, 135.5023, ['御堂筋', '心斎橋筋', '堺筋']],
  ['Sydney', 'AU', -33.8688, 151.2093, ['George Street', 'Pitt Street', 'Oxford Street']],
  ['Melbourne', 'AU', -37.8136, 144.9631, ['Collins Street', 'Bourke Street', 'Chapel Street']],
  ['São Paulo', 'BR', -23.5558, -46.6396, ['Avenida Paulista', 'Rua Oscar Freire', 'Rua Augusta']],
  ['Ciudad de México', 'MX', 19.4326, -99.1332, ['Paseo de la Reforma', 'Avenida Insurgentes Sur', 'Calle Madero']],
  ['Singapore', 'SG', 1.3521, 103.8198, ['Orchard Road', 'Raffles Place', 'Bukit Timah Road']],
];

/** City name → its country and streets, for tests that check an address belongs to its city. */
export const CITY_STREETS: ReadonlyMap<
  string,
  { readonly country: string; readonly streets: readonly string[] }
> = new Map(CITIES.map(([name, country, , , streets]) => [name, { country, streets }]));

const CITIES_BY_COUNTRY = new Map<string, City[]>();
for (const city of CITIES) {
  const list = CITIES_BY_COUNTRY.get(city[1]) ?? [];
  list.push(city);
  CITIES_BY_COUNTRY.set(city[1], list);
}

/** The street line as the country writes it: "350 Broadway", "Bahnhofstrasse 12", "Avenida Paulista, 1578". */
function streetLine(country: string, street: string, number: number): string {
  switch (country) {
    case 'DE':
    case 'CH':
    case 'SE':
    case 'NL':
      // Genève writes the number first, as France does.
      return street.startsWith('Rue') || street.startsWith('Boulevard')
        ? `${number} ${street}`
        : `${street} ${number}`;
    case 'BR':
    case 'MX':
      return `${street}, ${number}`;
    case 'JP':
      return `${street} ${Math.ceil(number / 100)}-${(number % 30) + 1}`;
    default:
      return `${number} ${street}`;
  }
}

export const storeLocations: DatasetDefinition = {
  id: 'store_locations',
  displayName: 'Store Locations',
  summary: 'Physical locations (stores, branches, restaurants) with opening and closing dates.',
  blogUrl: null,
  salt: 0x53544f52,
  // As the spec's second sample: no spreadsheets for this dataset.
  formats: ['table', 'map', 'csv'],
  lastDateUpdated: '2024-12-31T22:15:00Z',
  // biome-ignore format: one descriptor per line
  fields: [
    tickerField(),
    field('store_id', 'Store ID', 'string', "The company's own identifier of the location.", { length: 64 }),
    field('name', 'Name', 'string', 'Name of the location as shown to customers.'),
    field('address', 'Address', 'string', 'Street address; may span lines.', { length: 512 }),
    field('city', 'City', 'string', 'City or town.', { length: 128 }),
    field('country', 'Country', 'string', 'ISO 3166-1 alpha-2 country code.', { length: 2 }),
    field('latitude', 'Latitude', 'number', 'WGS 84 latitude in degrees.'),
    field('longitude', 'Longitude', 'number', 'WGS 84 longitude in degrees.'),
    field('opened_date', 'Opened', 'date', 'Day the location opened.'),
    field('closed_date', 'Closed', 'date', 'Day the location closed; null while open.'),
    field('is_open', 'Open', 'boolean', 'Whether the location is open today.'),
    field('updated_at', 'Updated At', 'datetime', 'When the record last changed.'),
  ],

  includes: (company) => company.stores > 0,

  rowCount(company, rng) {
    return Math.max(12, Math.floor(company.stores * (0.7 + 0.6 * rng.float())));
  },

  row(ctx: RowContext, rng: Rng): WireValue[] {
    const { company } = ctx;
    const span = LAST_OPENING - FIRST_OPENING;
    // Openings spread over the years in index order, with jitter inside each slot.
    const opened = FIRST_OPENING + Math.floor(((ctx.index + rng.float()) * span) / ctx.count);
    const home = CITIES_BY_COUNTRY.get(company.entry.country);
    const [city, country, lat, lng, streets] = home && rng.chance(0.7) ? rng.pick(home) : rng.pick(CITIES);

    const entity = company.entry.entities[0]!;
    const name = rng.chance(0.2)
      ? `${entity.display_name} – ${city} Centre`
      : `${entity.display_name} ${city}`;
    const number = rng.int(1, 2400);
    const street = streetLine(country, rng.pick(streets), number);
    const roll = rng.float();
    const address =
      roll < 0.05
        ? `Unit ${rng.int(1, 40)}\n${street}`
        : roll < 0.35
          ? `${street}, Suite ${rng.int(100, 999)}`
          : street;

    let closed: number | null = null;
    if (rng.chance(0.12)) {
      const day = opened + rng.int(365, 6000);
      closed = day <= END_DAY ? day : null;
    }
    const updated = (END_DAY - rng.int(0, 365)) * MS_PER_DAY + rng.int(0, 86_399) * 1000;

    return [
      company.entry.id,
      `${company.ident.toUpperCase()}-${String(ctx.index + 1).padStart(5, '0')}`,
      name,
      address,
      city,
      country,
      roundTo(lat + (rng.float() - 0.5) * 0.3, 6),
      roundTo(lng + (rng.float() - 0.5) * 0.3, 6),
      dayText(opened),
      closed === null ? null : dayText(closed),
      closed === null,
      timestampText(Math.max(updated, opened * MS_PER_DAY)),
    ];
  },
};
