import { type FormatName, MediaType } from '../../core/wire.js';
import { csv } from './csv.js';
import { mapJson } from './map-json.js';
import type { PageData } from './page.js';
import { tableJson } from './table-json.js';
import { xls } from './xls.js';
import { xlsx } from './xlsx.js';

export type { PageData } from './page.js';

const SERIALIZERS: Record<FormatName, (page: PageData) => Buffer | Promise<Buffer>> = {
  table: tableJson,
  map: mapJson,
  csv,
  xls,
  xlsx,
};

/** `Content-Type` of each format's result body. */
export const CONTENT_TYPES: Record<FormatName, string> = {
  table: MediaType.table,
  map: MediaType.map,
  csv: `${MediaType.csv}; charset=utf-8`,
  xls: MediaType.xls,
  xlsx: MediaType.xlsx,
};

export function serializePage(format: FormatName, page: PageData): Buffer | Promise<Buffer> {
  return SERIALIZERS[format](page);
}
