/**
 * The synthetic companies every dataset draws from. Names and classifications are realistic so the
 * emulator's output reads like the real service's; the numbers attached to them are invented.
 */
import type { TickerEntry } from '../core/wire.js';

/** What the datasets need to know about a company beyond its wire entry. */
export interface CompanyProfile {
  /** The ticker search entry, exactly as served. */
  readonly entry: TickerEntry;
  /** Position in `COMPANY_PROFILES` (sorted by ticker): part of every row's hash key. */
  readonly index: number;
  /** The identifier part of the ticker (`aapl` in `nasdaq:aapl`). */
  readonly ident: string;
  /** Web domain, from the URL when there is one. */
  readonly domain: string;
  /** 1 small, 2 medium, 3 large: scales job listing and traffic volumes. */
  readonly size: 1 | 2 | 3;
  /** Typical number of physical locations; 0 = not in `store_locations`. */
  readonly stores: number;
  /** Mobile apps; empty = not in `app_reviews`. */
  readonly apps: readonly string[];
}

type Size = CompanyProfile['size'];

interface CompanySeed {
  ticker: string;
  name: string;
  sector: string;
  industry: string;
  country: string;
  url: string;
  /** `[entity name, display name]`; the first is the company itself. */
  entities: [string, string][];
  size: Size;
  stores?: number;
  apps?: string[];
}

// One company per line reads as a table; the formatter would explode each into ten lines.
// biome-ignore format: table
const SEEDS: CompanySeed[] = [
  // NASDAQ
  { ticker: 'nasdaq:aapl', name: 'Apple Inc.', sector: 'Technology', industry: 'Consumer Electronics', country: 'US', url: 'https://www.apple.com', entities: [['apple', 'Apple'], ['beats', 'Beats by Dre']], size: 3, stores: 180, apps: ['Apple Music', 'Apple TV'] },
  { ticker: 'nasdaq:msft', name: 'Microsoft Corporation', sector: 'Technology', industry: 'Software—Infrastructure', country: 'US', url: 'https://www.microsoft.com', entities: [['microsoft', 'Microsoft'], ['linkedin', 'LinkedIn'], ['github', 'GitHub']], size: 3, apps: ['Microsoft Teams', 'Outlook'] },
  { ticker: 'nasdaq:amzn', name: 'Amazon.com, Inc.', sector: 'Consumer Cyclical', industry: 'Internet Retail', country: 'US', url: 'https://www.amazon.com', entities: [['amazon', 'Amazon'], ['whole_foods', 'Whole Foods Market'], ['aws', 'Amazon Web Services']], size: 3, stores: 320, apps: ['Amazon Shopping', 'Prime Video'] },
  { ticker: 'nasdaq:googl', name: 'Alphabet Inc.', sector: 'Communication Services', industry: 'Internet Content & Information', country: 'US', url: 'https://abc.xyz', entities: [['google', 'Google'], ['youtube', 'YouTube'], ['waymo', 'Waymo']], size: 3, apps: ['Google Maps', 'YouTube'] },
  { ticker: 'nasdaq:meta', name: 'Meta Platforms, Inc.', sector: 'Communication Services', industry: 'Internet Content & Information', country: 'US', url: 'https://about.meta.com', entities: [['facebook', 'Facebook'], ['instagram', 'Instagram'], ['whatsapp', 'WhatsApp']], size: 3, apps: ['Instagram', 'WhatsApp Messenger'] },
  { ticker: 'nasdaq:nflx', name: 'Netflix, Inc.', sector: 'Communication Services', industry: 'Entertainment', country: 'US', url: 'https://www.netflix.com', entities: [['netflix', 'Netflix']], size: 2, apps: ['Netflix'] },
  { ticker: 'nasdaq:tsla', name: 'Tesla, Inc.', sector: 'Consumer Cyclical', industry: 'Auto Manufacturers', country: 'US', url: 'https://www.tesla.com', entities: [['tesla', 'Tesla'], ['tesla_energy', 'Tesla Energy']], size: 3, stores: 140, apps: ['Tesla'] },
  { ticker: 'nasdaq:sbux', name: 'Starbucks Corporation', sector: 'Consumer Cyclical', industry: 'Restaurants', country: 'US', url: 'https://www.starbucks.com', entities: [['starbucks', 'Starbucks'], ['teavana', 'Teavana']], size: 3, stores: 420, apps: ['Starbucks'] },
  { ticker: 'nasdaq:cost', name: 'Costco Wholesale Corporation', sector: 'Consumer Defensive', industry: 'Discount Stores', country: 'US', url: 'https://www.costco.com', entities: [['costco', 'Costco']], size: 3, stores: 260, apps: ['Costco Wholesale'] },
  { ticker: 'nasdaq:pep', name: 'PepsiCo, Inc.', sector: 'Consumer Defensive', industry: 'Beverages—Non-Alcoholic', country: 'US', url: 'https://www.pepsico.com', entities: [['pepsico', 'PepsiCo'], ['frito_lay', 'Frito-Lay'], ['quaker', 'Quaker Oats']], size: 3 },
  { ticker: 'nasdaq:adbe', name: 'Adobe Inc.', sector: 'Technology', industry: 'Software—Infrastructure', country: 'US', url: 'https://www.adobe.com', entities: [['adobe', 'Adobe']], size: 2, apps: ['Adobe Acrobat Reader'] },
  { ticker: 'nasdaq:intc', name: 'Intel Corporation', sector: 'Technology', industry: 'Semiconductors', country: 'US', url: 'https://www.intel.com', entities: [['intel', 'Intel'], ['mobileye', 'Mobileye']], size: 3 },
  { ticker: 'nasdaq:nvda', name: 'NVIDIA Corporation', sector: 'Technology', industry: 'Semiconductors', country: 'US', url: 'https://www.nvidia.com', entities: [['nvidia', 'NVIDIA']], size: 2, apps: ['GeForce NOW'] },
  { ticker: 'nasdaq:abnb', name: 'Airbnb, Inc.', sector: 'Consumer Cyclical', industry: 'Travel Services', country: 'US', url: 'https://www.airbnb.com', entities: [['airbnb', 'Airbnb']], size: 2, apps: ['Airbnb'] },
  // NYSE
  { ticker: 'nyse:wmt', name: 'Walmart Inc.', sector: 'Consumer Defensive', industry: 'Discount Stores', country: 'US', url: 'https://www.walmart.com', entities: [['walmart', 'Walmart'], ['sams_club', "Sam's Club"], ['flipkart', 'Flipkart']], size: 3, stores: 480, apps: ['Walmart: Shopping & Savings'] },
  { ticker: 'nyse:ko', name: 'The Coca-Cola Company', sector: 'Consumer Defensive', industry: 'Beverages—Non-Alcoholic', country: 'US', url: 'https://www.coca-colacompany.com', entities: [['coca_cola', 'Coca-Cola'], ['costa', 'Costa Coffee']], size: 2, stores: 60 },
  { ticker: 'nyse:mcd', name: "McDonald's Corporation", sector: 'Consumer Cyclical', industry: 'Restaurants', country: 'US', url: 'https://www.mcdonalds.com', entities: [['mcdonalds', "McDonald's"]], size: 3, stores: 450, apps: ["McDonald's"] },
  { ticker: 'nyse:nke', name: 'NIKE, Inc.', sector: 'Consumer Cyclical', industry: 'Footwear & Accessories', country: 'US', url: 'https://www.nike.com', entities: [['nike', 'Nike'], ['jordan', 'Jordan Brand'], ['converse', 'Converse']], size: 2, stores: 150, apps: ['Nike', 'SNKRS'] },
  { ticker: 'nyse:dis', name: 'The Walt Disney Company', sector: 'Communication Services', industry: 'Entertainment', country: 'US', url: 'https://thewaltdisneycompany.com', entities: [['disney', 'Disney'], ['espn', 'ESPN'], ['pixar', 'Pixar']], size: 3, stores: 40, apps: ['Disney+', 'ESPN'] },
  { ticker: 'nyse:jpm', name: 'JPMorgan Chase & Co.', sector: 'Financial Services', industry: 'Banks—Diversified', country: 'US', url: 'https://www.jpmorganchase.com', entities: [['chase', 'Chase'], ['jp_morgan', 'J.P. Morgan']], size: 3, stores: 380, apps: ['Chase Mobile'] },
  { ticker: 'nyse:tgt', name: 'Target Corporation', sector: 'Consumer Defensive', industry: 'Discount Stores', country: 'US', url: 'https://www.target.com', entities: [['target', 'Target']], size: 3, stores: 390, apps: ['Target'] },
  { ticker: 'nyse:hd', name: 'The Home Depot, Inc.', sector: 'Consumer Cyclical', industry: 'Home Improvement Retail', country: 'US', url: 'https://www.homedepot.com', entities: [['home_depot', 'The Home Depot']], size: 3, stores: 330, apps: ['The Home Depot'] },
  { ticker: 'nyse:low', name: "Lowe's Companies, Inc.", sector: 'Consumer Cyclical', industry: 'Home Improvement Retail', country: 'US', url: 'https://www.lowes.com', entities: [['lowes', "Lowe's"]], size: 2, stores: 280 },
  { ticker: 'nyse:ups', name: 'United Parcel Service, Inc.', sector: 'Industrials', industry: 'Integrated Freight & Logistics', country: 'US', url: 'https://www.ups.com', entities: [['ups', 'UPS'], ['ups_store', 'The UPS Store']], size: 3, stores: 300, apps: ['UPS Mobile'] },
  { ticker: 'nyse:uber', name: 'Uber Technologies, Inc.', sector: 'Technology', industry: 'Software—Application', country: 'US', url: 'https://www.uber.com', entities: [['uber', 'Uber'], ['uber_eats', 'Uber Eats']], size: 2, apps: ['Uber', 'Uber Eats'] },
  { ticker: 'nyse:shop', name: 'Shopify Inc.', sector: 'Technology', industry: 'Software—Application', country: 'CA', url: 'https://www.shopify.com', entities: [['shopify', 'Shopify'], ['shop_app', 'Shop']], size: 2, apps: ['Shop: All your favorite brands'] },
  { ticker: 'nyse:cmg', name: 'Chipotle Mexican Grill, Inc.', sector: 'Consumer Cyclical', industry: 'Restaurants', country: 'US', url: 'https://www.chipotle.com', entities: [['chipotle', 'Chipotle']], size: 2, stores: 310, apps: ['Chipotle'] },
  { ticker: 'nyse:bac', name: 'Bank of America Corporation', sector: 'Financial Services', industry: 'Banks—Diversified', country: 'US', url: 'https://www.bankofamerica.com', entities: [['bank_of_america', 'Bank of America'], ['merrill', 'Merrill']], size: 3, stores: 350, apps: ['Bank of America Mobile Banking'] },
  { ticker: 'nyse:pg', name: 'The Procter & Gamble Company', sector: 'Consumer Defensive', industry: 'Household & Personal Products', country: 'US', url: 'https://us.pg.com', entities: [['pg', 'P&G'], ['gillette', 'Gillette']], size: 3 },
  { ticker: 'nyse:brk.b', name: 'Berkshire Hathaway Inc.', sector: 'Financial Services', industry: 'Insurance—Diversified', country: 'US', url: 'https://www.berkshirehathaway.com', entities: [['berkshire', 'Berkshire Hathaway'], ['geico', 'GEICO'], ['dairy_queen', 'Dairy Queen']], size: 2, stores: 200, apps: ['GEICO Mobile'] },
  { ticker: 'nyse:spot', name: 'Spotify Technology S.A.', sector: 'Communication Services', industry: 'Internet Content & Information', country: 'SE', url: 'https://www.spotify.com', entities: [['spotify', 'Spotify']], size: 2, apps: ['Spotify: Music and Podcasts'] },
  // London
  { ticker: 'lse:tsco', name: 'Tesco PLC', sector: 'Consumer Defensive', industry: 'Grocery Stores', country: 'GB', url: 'https://www.tescoplc.com', entities: [['tesco', 'Tesco'], ['booker', 'Booker Group']], size: 3, stores: 400, apps: ['Tesco Grocery & Clubcard'] },
  { ticker: 'lse:hsba', name: 'HSBC Holdings plc', sector: 'Financial Services', industry: 'Banks—Diversified', country: 'GB', url: 'https://www.hsbc.com', entities: [['hsbc', 'HSBC'], ['first_direct', 'first direct']], size: 3, stores: 260, apps: ['HSBC UK Mobile Banking'] },
  { ticker: 'lse:ulvr', name: 'Unilever PLC', sector: 'Consumer Defensive', industry: 'Household & Personal Products', country: 'GB', url: 'https://www.unilever.com', entities: [['unilever', 'Unilever'], ['ben_jerrys', "Ben & Jerry's"], ['dove', 'Dove']], size: 3 },
  { ticker: 'lse:azn', name: 'AstraZeneca PLC', sector: 'Healthcare', industry: 'Drug Manufacturers—General', country: 'GB', url: 'https://www.astrazeneca.com', entities: [['astrazeneca', 'AstraZeneca'], ['alexion', 'Alexion']], size: 2 },
  { ticker: 'lse:mks', name: 'Marks and Spencer Group plc', sector: 'Consumer Cyclical', industry: 'Department Stores', country: 'GB', url: 'https://corporate.marksandspencer.com', entities: [['marks_spencer', 'M&S'], ['ocado_retail', 'Ocado Retail']], size: 2, stores: 220, apps: ['M&S - Fashion, Food & Homeware'] },
  { ticker: 'lse:kgf', name: 'Kingfisher plc', sector: 'Consumer Cyclical', industry: 'Home Improvement Retail', country: 'GB', url: 'https://www.kingfisher.com', entities: [['b_and_q', 'B&Q'], ['castorama', 'Castorama'], ['screwfix', 'Screwfix']], size: 2, stores: 240 },
  // Other exchanges
  { ticker: 'six:nesn', name: 'Nestlé S.A.', sector: 'Consumer Defensive', industry: 'Packaged Foods', country: 'CH', url: 'https://www.nestle.com', entities: [['nestle', 'Nestlé'], ['nespresso', 'Nespresso'], ['purina', 'Purina']], size: 3, stores: 90, apps: ['Nespresso'] },
  { ticker: 'xetra:sap', name: 'SAP SE', sector: 'Technology', industry: 'Software—Application', country: 'DE', url: 'https://www.sap.com', entities: [['sap', 'SAP'], ['concur', 'SAP Concur']], size: 3, apps: ['SAP Concur'] },
  { ticker: 'epa:mc', name: 'LVMH Moët Hennessy Louis Vuitton SE', sector: 'Consumer Cyclical', industry: 'Luxury Goods', country: 'FR', url: 'https://www.lvmh.com', entities: [['louis_vuitton', 'Louis Vuitton'], ['sephora', 'Sephora'], ['dior', 'Christian Dior']], size: 3, stores: 300, apps: ['Sephora: Buy Makeup & Skincare'] },
  { ticker: 'tyo:7203', name: 'Toyota Motor Corporation', sector: 'Consumer Cyclical', industry: 'Auto Manufacturers', country: 'JP', url: 'https://global.toyota', entities: [['toyota', 'Toyota'], ['lexus', 'Lexus']], size: 3, stores: 120, apps: ['Toyota'] },
  { ticker: 'tyo:9983', name: 'Fast Retailing Co., Ltd.', sector: 'Consumer Cyclical', industry: 'Apparel Retail', country: 'JP', url: 'https://www.fastretailing.com', entities: [['uniqlo', 'UNIQLO'], ['gu', 'GU']], size: 2, stores: 360, apps: ['UNIQLO'] },
  { ticker: 'sto:hm-b', name: 'H & M Hennes & Mauritz AB', sector: 'Consumer Cyclical', industry: 'Apparel Retail', country: 'SE', url: 'https://hmgroup.com', entities: [['hm', 'H&M'], ['cos', 'COS'], ['arket', 'ARKET']], size: 2, stores: 380, apps: ['H&M - we love fashion'] },
  { ticker: 'asx:wow', name: 'Woolworths Group Limited', sector: 'Consumer Defensive', industry: 'Grocery Stores', country: 'AU', url: 'https://www.woolworthsgroup.com.au', entities: [['woolworths', 'Woolworths'], ['big_w', 'BIG W']], size: 2, stores: 340, apps: ['Woolworths'] },
  // Private companies: no public web traffic panel, so no `web_traffic` rows.
  { ticker: 'private:stripe', name: 'Stripe, Inc.', sector: 'Technology', industry: 'Software—Infrastructure', country: 'US', url: 'https://stripe.com', entities: [['stripe', 'Stripe']], size: 2, apps: ['Stripe Dashboard'] },
  { ticker: 'private:spacex', name: 'Space Exploration Technologies Corp.', sector: 'Industrials', industry: 'Aerospace & Defense', country: 'US', url: 'https://www.spacex.com', entities: [['spacex', 'SpaceX'], ['starlink', 'Starlink']], size: 2, apps: ['Starlink'] },
  { ticker: 'private:ikea', name: 'Inter IKEA Group', sector: 'Consumer Cyclical', industry: 'Home Furnishings', country: 'NL', url: 'https://www.inter.ikea.com', entities: [['ikea', 'IKEA']], size: 3, stores: 240, apps: ['IKEA'] },
  { ticker: 'private:bytedance', name: 'ByteDance Ltd.', sector: 'Communication Services', industry: 'Internet Content & Information', country: 'CN', url: 'https://www.bytedance.com', entities: [['tiktok', 'TikTok'], ['capcut', 'CapCut'], ['douyin', '抖音 Douyin']], size: 3, apps: ['TikTok', 'CapCut - Video Editor'] },
  { ticker: 'private:revolut', name: 'Revolut Ltd', sector: 'Financial Services', industry: 'Credit Services', country: 'GB', url: 'https://www.revolut.com', entities: [['revolut', 'Revolut']], size: 2, apps: ['Revolut'] },
  { ticker: 'private:canva', name: 'Canva Pty Ltd', sector: 'Technology', industry: 'Software—Application', country: 'AU', url: 'https://www.canva.com', entities: [['canva', 'Canva']], size: 1, apps: ['Canva: Design, Photo & Video'] },
  { ticker: 'private:databricks', name: 'Databricks, Inc.', sector: 'Technology', industry: 'Software—Infrastructure', country: 'US', url: '', entities: [['databricks', 'Databricks']], size: 1 },
  { ticker: 'private:chick-fil-a', name: 'Chick-fil-A, Inc.', sector: 'Consumer Cyclical', industry: 'Restaurants', country: 'US', url: 'https://www.chick-fil-a.com', entities: [['chick_fil_a', 'Chick-fil-A']], size: 2, stores: 310, apps: ['Chick-fil-A'] },
  { ticker: 'private:trader_joes', name: "Trader Joe's Company", sector: 'Consumer Defensive', industry: 'Grocery Stores', country: 'US', url: '', entities: [['trader_joes', "Trader Joe's"]], size: 1, stores: 120 },
  { ticker: 'private:mars', name: 'Mars, Incorporated', sector: 'Consumer Defensive', industry: 'Confectioners', country: 'US', url: '', entities: [['mars', 'Mars'], ['wrigley', 'Wrigley'], ['banfield', 'Banfield Pet Hospital']], size: 2, stores: 80 },
  { ticker: 'private:aldi', name: 'ALDI SÜD', sector: 'Consumer Defensive', industry: 'Discount Stores', country: 'DE', url: 'https://www.aldi-sued.de', entities: [['aldi_sud', 'ALDI SÜD'], ['aldi_us', 'ALDI US']], size: 2, stores: 400, apps: ['ALDI SÜD'] },
];

function domainOf(seed: CompanySeed, ident: string): string {
  if (seed.url === '') return `${ident.replace(/[^a-z0-9]/g, '')}.com`;
  return new URL(seed.url).hostname.replace(/^www\./, '');
}

function buildProfiles(): readonly CompanyProfile[] {
  const sorted = [...SEEDS].sort((a, b) => (a.ticker < b.ticker ? -1 : a.ticker > b.ticker ? 1 : 0));
  return Object.freeze(
    sorted.map((seed, index): CompanyProfile => {
      const ident = seed.ticker.slice(seed.ticker.indexOf(':') + 1);
      const entry: TickerEntry = {
        id: seed.ticker,
        display_name: seed.name,
        sector: seed.sector,
        industry: seed.industry,
        country: seed.country,
        url: seed.url,
        entities: seed.entities.map(([name, display]) => ({
          id: `${name}@${seed.ticker}`,
          display_name: display,
        })),
      };
      return Object.freeze({
        entry: deepFreeze(entry),
        index,
        ident,
        domain: domainOf(seed, ident),
        size: seed.size,
        stores: seed.stores ?? 0,
        apps: Object.freeze([...(seed.apps ?? [])]),
      });
    }),
  );
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}

/** Every company, sorted by ticker: the order rows of a query come in. */
export const COMPANY_PROFILES: readonly CompanyProfile[] = buildProfiles();

/**
 * The emulator's companies as ticker search entries, sorted by ticker id (frozen).
 *
 * @example
 * COMPANIES.find((c) => c.id === 'nasdaq:aapl')?.entities[0]?.id; // 'apple@nasdaq:aapl'
 */
export const COMPANIES: readonly TickerEntry[] = Object.freeze(COMPANY_PROFILES.map((p) => p.entry));

const BY_TICKER = new Map(COMPANY_PROFILES.map((p) => [p.entry.id, p]));

export function companyByTicker(ticker: string): CompanyProfile | undefined {
  return BY_TICKER.get(ticker);
}
