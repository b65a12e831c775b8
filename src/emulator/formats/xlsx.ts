import { PassThrough } from 'node:stream';
import ExcelJS from 'exceljs';
import type { PageData } from './page.js';

/**
 * XLSX through exceljs's streaming writer, inline strings (`useSharedStrings: false`): one worksheet
 * `results`, row 1 the field ids, then one row per result row. Strings (dates and timestamps as their
 * wire text) are text cells, numbers numeric, booleans boolean; null is no cell and "" an empty text
 * cell, which exceljs's streaming reader gives back as null and "" respectively.
 */
export async function xlsx(page: PageData): Promise<Buffer> {
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
  for (const chunk of page.chunks()) {
    for (const row of chunk) sheet.addRow(row as unknown[]).commit();
  }
  sheet.commit();
  await workbook.commit();
  await done;
  return Buffer.concat(chunks);
}
