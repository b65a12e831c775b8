import { appReviews } from './app-reviews.js';
import type { DatasetDefinition } from './dataset.js';
import { jobListings } from './job-listings.js';
import { storeLocations } from './store-locations.js';
import { webTraffic } from './web-traffic.js';

export type { DatasetDefinition, RowContext } from './dataset.js';

/** Every dataset, in the order `GET /datasets/` lists them. */
export const DATASETS: readonly DatasetDefinition[] = [jobListings, storeLocations, webTraffic, appReviews];

const BY_ID = new Map(DATASETS.map((d) => [d.id, d]));

export function datasetById(id: string): DatasetDefinition | undefined {
  return BY_ID.get(id);
}
