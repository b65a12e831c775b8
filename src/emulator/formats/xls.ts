import type { WireValue } from '../../core/wire.js';
import type { PageMeta, PageWriter } from './page.js';

/** XML 1.0 text: markup characters escaped, CR and LF as references so parsers keep them as they are. */
function xmlText(text: string): string {
  return text.replace(/[&<>"\r\n]/g, (c) =>
    c === '&'
      ? '&amp;'
      : c === '<'
        ? '&lt;'
        : c === '>'
          ? '&gt;'
          : c === '"'
            ? '&quot;'
            : c === '\r'
              ? '&#13;'
              : '&#10;',
  );
}

function cell(value: WireValue, index: number, previous: number): string {
  // A null is no cell; the next cell then names its 1-based column so the others keep their place.
  const at = index === previous + 1 ? '' : ` ss:Index="${index + 1}"`;
  if (typeof value === 'number') return `<Cell${at}><Data ss:Type="Number">${value}</Data></Cell>`;
  if (typeof value === 'boolean') return `<Cell${at}><Data ss:Type="Boolean">${value ? 1 : 0}</Data></Cell>`;
  return `<Cell${at}><Data ss:Type="String">${xmlText(String(value))}</Data></Cell>`;
}

function row(values: readonly WireValue[], width: number): string {
  let xml = '<Row>';
  let previous = -1;
  for (let j = 0; j < width; j++) {
    const value = values[j] ?? null;
    if (value === null) continue;
    xml += cell(value, j, previous);
    previous = j;
  }
  return `${xml}</Row>`;
}

/**
 * XLS as Excel 2003 XML (SpreadsheetML), which Excel and LibreOffice open. One worksheet `results`,
 * row 1 the field ids. The client never decodes it; it is offered for download.
 */
export function xls(page: PageMeta): PageWriter {
  const width = page.fields.length;
  const head = [
    '<?xml version="1.0" encoding="UTF-8"?>\n<?mso-application progid="Excel.Sheet"?>\n',
    '<Workbook xmlns="urn:schemas-microsoft-com:office:spreadsheet" ',
    'xmlns:ss="urn:schemas-microsoft-com:office:spreadsheet">\n',
    '<Worksheet ss:Name="results"><Table>\n',
    row(
      page.fields.map((f) => f.id),
      width,
    ),
  ];
  const parts: Buffer[] = [Buffer.from(head.join(''), 'utf8')];
  return {
    add(rows) {
      let text = '';
      for (const values of rows) text += `\n${row(values, width)}`;
      parts.push(Buffer.from(text, 'utf8'));
    },
    finish() {
      parts.push(Buffer.from('\n</Table></Worksheet></Workbook>\n', 'utf8'));
      return Buffer.concat(parts);
    },
  };
}
