import { PassThrough } from 'node:stream';
import { bigIntegerDigits } from '../big-integers.js';
import type { PageMeta, PageWriter } from './page.js';

/**
 * XLSX through exceljs's streaming writer, inline strings (`useSharedStrings: false`): one worksheet
 * `results`, row 1 the field ids, then one row per result row. Strings (dates and timestamps as their
 * wire text) are text cells, numbers numeric, booleans boolean; null is no cell and "" an empty text
 * cell, which exceljs's streaming reader gives back as null and "" respectively.
 *
 * Text is escaped as Excel itself writes OOXML strings (ST_Xstring): a CR, which XML line-end handling
 * would turn into LF on read, is written `_x000D_`, and a literal `_xHHHH_` is protected as `_x005F_xHHHH_`.
 * Readers that follow the convention (Excel, LibreOffice, our decoder) get the exact text back.
 */
export function escapeXlsxText(text: string): string {
  if (!text.includes('_x') && !text.includes('\r')) return text;
  return text.replace(/_x([0-9A-Fa-f]{4})_/g, '_x005F_x$1_').replace(/\r/g, '_x000D_');
}

/** A big integer is a text cell of its digits: Excel's numbers are doubles, which would round it. */
function escapeRow(row: readonly unknown[]): unknown[] {
  return row.map((v) => (typeof v === 'string' ? (bigIntegerDigits(v) ?? escapeXlsxText(v)) : v));
}

/**
 * Rows are kept as they come and written at `finish`: exceljs is loaded lazily (an await) and its writer
 * is asynchronous, so the workbook is produced in one go once every slice has generated its rows.
 */
export function xlsx(page: PageMeta): PageWriter {
  const rows: (readonly unknown[])[] = [];
  return {
    add(chunk) {
      for (const row of chunk) rows.push(row);
    },
    finish: () => workbook(page, rows),
  };
}

async function workbook(page: PageMeta, rows: readonly (readonly unknown[])[]): Promise<Buffer> {
  // Loaded on the first XLSX page, not with the emulator: exceljs costs ~18 MB of RSS in every process that
  // imports the emulator (the CLI starts one in-process), and most never serve a workbook.
  const { default: ExcelJS } = await import('exceljs');
  const chunks: Buffer[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({
    stream,
    useSharedStrings: false,
    useStyles: false,
  });
  const sheet = workbook.addWorksheet('results');
  sheet.addRow(page.fields.map((f) => f.id)).commit();
  for (const row of rows) sheet.addRow(escapeRow(row)).commit();
  sheet.commit();
  await workbook.commit();
  await done;
  return Buffer.concat(chunks);
}
