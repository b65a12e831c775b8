/**
 * Pure decoders, one per result format, behind one interface (formats.ts): a body and the column plan
 * in, the page's rows out, as wire rows in field order (the values table JSON would carry) or, from a
 * fast decoder, straight as columns. The converters (src/convert) type wire rows; streaming and paging
 * live above, and reach the decoders through `PageDecoder` only.
 */

export { type CsvDecodeOptions, decodeCsv } from './csv.js';
export {
  DECODABLE_FORMATS,
  type DecodableFormat,
  type DecodedPage,
  decodeTableJson,
  type FastDecoder,
  type FastDecoderOptions,
  FORMATS,
  type PageEnvelope,
  type PagePart,
  type ResultFormat,
} from './formats.js';
export {
  type BodyPool,
  type PageBody,
  PageDeclined,
  PageDecoder,
  type PageDecoderOptions,
} from './page-decoder.js';
export { parseTablePage } from './table-json.js';
export { decodeXlsx, type XlsxDecodeOptions } from './xlsx.js';
