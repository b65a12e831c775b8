/**
 * Shape checks for JSON responses: a service that breaks the spec gets a ProtocolError that says what was
 * wrong, instead of an `undefined` surfacing three calls later in the user's code.
 */
import { NotServiceError, ProtocolError, type RequestInfo } from '../core/errors.js';
import type {
  DatasetInfo,
  DatasetMetadata,
  FieldDescriptor,
  QueryHandle,
  TickerEntry,
} from '../core/wire.js';
import { isQueryId } from './validate.js';

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function parseJson(text: string, info: RequestInfo): unknown {
  try {
    return JSON.parse(text);
  } catch (cause) {
    // A 200 with a web page: a captive portal, a proxy's block page, a base URL that is a web site.
    if (/^\s*<(!doctype html|html|head|body)\b/i.test(text.slice(0, 200))) {
      throw new NotServiceError(info, `with an HTML page: ${text.trim().slice(0, 60)}`);
    }
    throw new ProtocolError(`Response is not JSON: ${text.slice(0, 60)}`, info, { cause });
  }
}

function need(cond: boolean, what: string, info: RequestInfo): void {
  if (!cond) throw new ProtocolError(`Unexpected response: ${what}`, info);
}

function checkDatasetInfo(v: unknown, at: string, info: RequestInfo): DatasetInfo {
  need(isObject(v) && typeof v.id === 'string', `${at} has no string \`id\``, info);
  return v as unknown as DatasetInfo;
}

export function checkFields(v: unknown, at: string, info: RequestInfo): FieldDescriptor[] {
  need(Array.isArray(v), `${at} is not an array`, info);
  (v as unknown[]).forEach((f, i) =>
    need(
      isObject(f) && typeof f.id === 'string' && typeof f.type === 'string',
      `${at}[${i}] is not a field descriptor`,
      info,
    ),
  );
  return v as FieldDescriptor[];
}

export function datasetList(body: unknown, info: RequestInfo): DatasetInfo[] {
  need(isObject(body) && Array.isArray(body.datasets), '`datasets` is not an array', info);
  return ((body as Obj).datasets as unknown[]).map((d, i) => checkDatasetInfo(d, `datasets[${i}]`, info));
}

export function datasetMetadata(body: unknown, info: RequestInfo): DatasetMetadata {
  const d = checkDatasetInfo(body, 'the dataset', info) as unknown as Obj;
  checkFields(d.fields, 'fields', info);
  return d as unknown as DatasetMetadata;
}

/** The spec keys ticker entries by the query text; tolerate a service that normalises the key. */
export function tickerEntries(body: unknown, text: string, info: RequestInfo): TickerEntry[] {
  need(isObject(body) && isObject(body.queries), '`queries` is not an object', info);
  const queries = (body as Obj).queries as Obj;
  const list = queries[text] ?? (Object.keys(queries).length === 1 ? Object.values(queries)[0] : []);
  need(Array.isArray(list), `\`queries[${JSON.stringify(text)}]\` is not an array`, info);
  (list as unknown[]).forEach((t, i) =>
    need(isObject(t) && typeof t.id === 'string', `ticker entry ${i} has no id`, info),
  );
  return list as TickerEntry[];
}

export function queryHandle(body: unknown, info: RequestInfo): QueryHandle {
  need(isObject(body), 'the query handle is not an object', info);
  const h = body as Obj;
  need(isQueryId(h.id), `query id ${JSON.stringify(h.id)} is not 64 lower-case hex characters`, info);
  need(typeof h.state === 'string', 'the handle has no `state`', info);
  need(
    h.total === undefined || (typeof h.total === 'number' && Number.isInteger(h.total) && h.total >= 0),
    '`total` is not a count',
    info,
  );
  need(
    h.formats === undefined || (Array.isArray(h.formats) && h.formats.every((f) => typeof f === 'string')),
    '`formats` is not a list of media types',
    info,
  );
  return {
    id: h.id as string,
    state: h.state as string,
    total: (h.total as number) ?? 0,
    formats: (h.formats as string[]) ?? [],
    ...(typeof h.message === 'string' ? { message: h.message } : {}),
  };
}
