import { type FormatName, MediaType } from '../../core/wire.js';
import { csv } from './csv.js';
import { mapJson } from './map-json.js';
import { type PageData, type PageMeta, type PageWriter, writeAll } from './page.js';
import { tableJson } from './table-json.js';
import { xls } from './xls.js';
import { xlsx } from './xlsx.js';

export type { PageData, PageMeta, PageWriter } from './page.js';

const WRITERS: Record<FormatName, (page: PageMeta) => PageWriter> = {
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

export function pageWriter(format: FormatName, page: PageMeta): PageWriter {
  return WRITERS[format](page);
}

/** A whole page at once (tests; the emulator itself builds pages in slices through `pageWriter`). */
export function serializePage(format: FormatName, page: PageData): Buffer | Promise<Buffer> {
  return writeAll(WRITERS[format](page), page);
}
