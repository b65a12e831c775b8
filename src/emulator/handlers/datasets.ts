import type { DatasetInfo, DatasetMetadata, TickerEntry } from '../../core/wire.js';
import { MediaType } from '../../core/wire.js';
import { COMPANY_PROFILES, companyByTicker } from '../companies.js';
import { DATASETS, type DatasetDefinition } from '../datasets/index.js';
import { quote } from '../messages.js';
import { TICKER_PATTERN } from '../query-body.js';
import { errorReply, jsonReply, type Reply } from '../reply.js';
import type { RouteRequest, ServiceState } from './context.js';

export function datasetListItem(dataset: DatasetDefinition): DatasetInfo {
  return {
    id: dataset.id,
    display_name: dataset.displayName,
    summary: dataset.summary,
    state: 'ready',
    blog_url: dataset.blogUrl,
    companies_count: COMPANY_PROFILES.filter((c) => dataset.includes(c)).length,
  };
}

/** `GET /datasets/[?ticker=]` */
export function listDatasets(req: RouteRequest): Reply {
  const ticker = req.query.ticker;
  if (ticker === undefined || ticker === '')
    return jsonReply(200, { datasets: DATASETS.map(datasetListItem) });
  if (!TICKER_PATTERN.test(ticker)) {
    return errorReply(400, `ticker must be shaped <market>:<identifier> in lower case, got ${quote(ticker)}`);
  }
  const company = companyByTicker(ticker);
  const datasets = company ? DATASETS.filter((d) => d.includes(company)).map(datasetListItem) : [];
  return jsonReply(200, { datasets });
}

/** `GET /datasets/<id>`: not in the spec; the list item plus descriptors, row cap and formats. */
export function datasetMetadata(dataset: DatasetDefinition, state: ServiceState): Reply {
  const metadata: DatasetMetadata = {
    ...datasetListItem(dataset),
    fields: [...dataset.fields],
    truncate_limit: state.options.rowCap,
    formats: dataset.formats.map((f) => MediaType[f]),
  };
  return jsonReply(200, metadata);
}

function matches(entry: TickerEntry, needle: string): boolean {
  return (
    entry.id.toLowerCase().includes(needle) ||
    entry.display_name.toLowerCase().includes(needle) ||
    entry.entities.some(
      (e) => e.id.toLowerCase().includes(needle) || e.display_name.toLowerCase().includes(needle),
    )
  );
}

/** `GET /datasets/<id>/tickers/?query=`: case-insensitive substring search; empty text lists all. */
export function searchTickers(dataset: DatasetDefinition, req: RouteRequest): Reply {
  const text = req.query.query ?? '';
  const needle = text.toLowerCase();
  const found = COMPANY_PROFILES.filter((c) => dataset.includes(c) && matches(c.entry, needle)).map(
    (c) => c.entry,
  );
  // A computed key is an own data property even for `__proto__`, so any text round-trips.
  return jsonReply(200, { tickers: {}, queries: { [text]: found } });
}
