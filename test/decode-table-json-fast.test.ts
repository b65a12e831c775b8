/**
 * The table-JSON byte decoder agrees with the reference path (JSON.parse + RecordBatchBuilder): on every
 * emulator dataset over real HTTP, and on fuzzed pages. Its contract is "the same result, or decline":
 * whenever it returns columns they must give byte-identical Arrow data, and whenever the reference fails
 * (a DecodeError, an InvalidValueError) it must decline, so the stream reports the reference's error.
 */

import { Table, tableToIPC } from 'apache-arrow';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  makeColumnRowFactory,
  makeRowFactory,
  planColumns,
  RecordBatchBuilder,
} from '../src/convert/index.js';
import { DecodeError, InvalidValueError } from '../src/core/errors.js';
import type { WireValue } from '../src/core/wire.js';
import { parseTablePage } from '../src/decode/index.js';
import { allSlices } from '../src/decode/slices.js';
import { envelopeOf } from '../src/decode/table-json.js';
import { FastTableDecoder, readTableEnvelope } from '../src/decode/table-json-fast.js';
import { DATASETS } from '../src/emulator/datasets/index.js';
import { exactDouble, field, trickyText, wireDate, wireTimestamp } from './convert-fixtures.js';
import { allOf, ipcBytes, setup } from './helpers.js';

const where = { start: 1, limit: 1000 };
const fields = [
  field('ticker', 'string', 'ticker'),
  field('d', 'date'),
  field('t', 'datetime'),
  field('n', 'number'),
  field('b', 'boolean'),
  field('s'),
];
const plan = planColumns(fields);

function envelope(rows: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const n = Array.isArray(rows) ? rows.length : 0;
  return {
    id: 'a'.repeat(64),
    state: 'complete',
    total: 5000,
    count: n,
    start: 1,
    limit: 1000,
    rows,
    fields,
    group_fields: [],
    sort_fields: [],
    last_date_updated: '2024-12-31T22:15:00Z',
    ...extra,
  };
}

interface Decoded {
  /** IPC bytes of the page's rows as one batch. */
  readonly ipc: Uint8Array;
  /** The envelope members the page fetcher checks (`count` against the rows, `total`, `start`). */
  readonly members: readonly number[];
  /** Row objects (output: 'rows'), when a row decoder was asked. */
  readonly objects?: unknown[] | undefined;
}

/** The reference: JSON.parse, then the builder over wire rows; or the error. */
function reference(text: string): Decoded | Error {
  try {
    const page = parseTablePage(text, where);
    const builder = new RecordBatchBuilder(plan);
    builder.appendRows(page.rows, 1, where);
    const make = makeRowFactory(plan);
    const objects = page.rows.map((r, i) => make(r, 1 + i, where));
    return { ipc: ipc(builder), members: [page.count, page.total, page.start], objects };
  } catch (error) {
    if (error instanceof DecodeError || error instanceof InvalidValueError) return error;
    throw error;
  }
}

function ipc(builder: RecordBatchBuilder): Uint8Array {
  return tableToIPC(new Table([builder.flush()]), 'stream');
}

/**
 * The fast path: columns, or `undefined` when it declines. The same decoder fed the body as it arrives
 * (`stream()`), in chunks of every size from 1 byte and with rows cut at every chunk's end, must give the
 * same: the same columns, or decline the same pages.
 */
function fast(bytes: Buffer): Decoded | undefined {
  const page = new FastTableDecoder(plan).decode(bytes, where);
  const whole = page && decoded(page);
  for (const sizes of CHUNKINGS) {
    const streamed = streamDecode(new FastTableDecoder(plan), bytes, sizes);
    if (whole === undefined) expect(streamed, 'decoded as it arrives, a page declined whole').toBeUndefined();
    else {
      expect(streamed, 'declined as it arrives, a page decoded whole').toBeDefined();
      expect(Buffer.from(decoded(streamed!).ipc).equals(Buffer.from(whole.ipc))).toBe(true);
      expect(decoded(streamed!).members).toEqual(whole.members);
    }
  }
  return whole;
}

function decoded(page: NonNullable<ReturnType<FastTableDecoder['decode']>>): Decoded {
  const builder = new RecordBatchBuilder(plan);
  builder.appendDecoded(page, 0, page.length);
  return { ipc: ipc(builder), members: [page.count, page.total, page.start] };
}

/** Chunk sizes, used in turn: bytes one at a time, odd sizes that cut rows anywhere, and big ones. */
const CHUNKINGS = [[1], [3, 17, 1, 64, 5, 250, 2], [4096, 7, 65536]];

/** `bytes` decoded as they arrive, in chunks of `sizes` in turn, rows cut at every chunk's end. */
function streamDecode(decoder: FastTableDecoder, bytes: Buffer, sizes: readonly number[]) {
  const stream = decoder.stream(where, bytes.length);
  for (let at = 0, k = 0; at < bytes.length; k++) {
    const size = sizes[k % sizes.length]!;
    // A copy: the stream must not keep a view of a chunk it was given (the socket's memory).
    stream.push(Buffer.from(bytes.subarray(at, at + size)));
    at += size;
  }
  return allSlices(stream.finish());
}

/** The property: accepted pages decode exactly as the reference; pages the reference rejects are declined. */
function agree(bytes: Buffer): 'fast' | 'declined' {
  const expected = reference(bytes.toString('utf8'));
  const got = fast(bytes);
  if (expected instanceof Error) {
    expect(got, `accepted a page the reference rejects: ${expected.message}`).toBeUndefined();
    return 'declined';
  }
  // Row output: a decoder that keeps JS strings exact, and row objects made from its columns.
  const exact = new FastTableDecoder(plan, { strings: 'exact' }).decode(bytes, where);
  if (exact !== undefined) {
    const objects: unknown[] = [];
    makeColumnRowFactory(plan)(exact, 0, exact.length, objects);
    expect(objects).toEqual(expected.objects);
  }
  if (got === undefined) return 'declined';
  expect(Buffer.from(got.ipc).equals(Buffer.from(expected.ipc))).toBe(true);
  expect(got.members).toEqual(expected.members);
  // The page as a batch of its own with its buffers adopted (what the stream does with a page that is
  // exactly one batch): into buffers sized to the page, and into bigger recycled ones (views or copies).
  const sized = { start: 1, limit: Math.max(1, got.members[0]!) };
  for (const decoder of [new FastTableDecoder(plan), decoderWithSpareBuffers()]) {
    const page = decoder.decode(bytes, sized)!;
    const batch = new RecordBatchBuilder(plan).adoptDecoded(page);
    expect(Buffer.from(tableToIPC(new Table([batch]), 'stream')).equals(Buffer.from(expected.ipc))).toBe(
      true,
    );
  }
  return 'fast';
}

/** `text`'s bytes cut at `at`, or with `byte` put in place of the one there, or inserted before it. */
function garble(text: string, at: number, byte: number, how: 'cut' | 'replace' | 'insert'): Buffer {
  const b = Buffer.from(text);
  if (how === 'cut') return b.subarray(0, at);
  const rest = how === 'replace' ? b.subarray(at + 1) : b.subarray(at);
  return Buffer.concat([b.subarray(0, at), Buffer.from([byte]), rest]);
}

/** Checks 1,500 garblings of `text`: cut at a byte, one byte replaced, or one inserted (`at`: where). */
function forEachGarbling(text: string, check: (bytes: Buffer, at: number) => void): void {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: text.length }),
      fc.integer({ min: 0, max: 255 }),
      fc.constantFrom('cut', 'replace', 'insert'),
      (at, byte, how) => check(garble(text, at, byte, how), at),
    ),
    { numRuns: 1500 },
  );
}

/** A decoder whose spare buffers come from a bigger page, with longer strings. */
function decoderWithSpareBuffers(): FastTableDecoder {
  const decoder = new FastTableDecoder(plan);
  const big = Array.from({ length: 300 }, (_, i) => [
    'nasdaq:aapl',
    '20240101',
    '20240101T000000Z',
    i,
    true,
    'x'.repeat(200),
  ]);
  decoder.recycle(decoder.decode(Buffer.from(JSON.stringify(envelope(big))), { start: 1, limit: 300 })!);
  return decoder;
}

/** A JSON string literal with some characters escaped as \uXXXX (what other serializers do). */
function escapedLiteral(s: string, mask: number): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    const code = s.charCodeAt(i);
    if ((mask >> (i % 31)) & 1 || code < 0x20 || ch === '"' || ch === '\\')
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

const anyText = fc.oneof(
  trickyText,
  fc.string({ unit: 'binary' }), // lone surrogates included
  fc.constantFrom('\ud800', '\udc00', '\ud83d\ude00', '\u0000', '\u001f', '\\', '/', '\b\f\t'),
);
const anyNumber = fc.oneof(
  fc.integer(),
  exactDouble(),
  fc.constantFrom(0, -0, 1e21, 1e-7, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 123456789012345.6, 0.1, 5e-324),
);
const wrongTyped = fc.oneof(
  anyText,
  anyNumber,
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('1', ' 1', '0x10', 'true', 'false', '20240230', '20240101T000000Z', '20240101T250000Z'),
);
/** Mostly well-typed values, sometimes anything. */
const cell = (typed: fc.Arbitrary<WireValue>) =>
  fc.oneof(
    { weight: 6, arbitrary: typed },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: wrongTyped },
  );
const row = fc.tuple(
  cell(fc.constantFrom('nasdaq:aapl', 'nyse:ge', 'xetra:sap', 'private:é')),
  cell(wireDate),
  cell(fc.oneof(wireTimestamp, wireDate)),
  cell(anyNumber),
  cell(fc.oneof(fc.boolean(), fc.constantFrom(0, 1, 'true', 'false'))),
  cell(anyText),
);

describe('FastTableDecoder', () => {
  it('agrees with JSON.parse + the builder on fuzzed pages (strings, numbers, dates, nulls, wrong types)', () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.array(row, { maxLength: 40 }), (rows) => {
        if (agree(Buffer.from(JSON.stringify(envelope(rows)))) === 'fast') accepted++;
      }),
      { numRuns: 400 },
    );
    expect(accepted).toBeGreaterThan(50);
  });

  it('agrees on other spellings of the same JSON: \\u escapes, whitespace, member order', () => {
    fc.assert(
      fc.property(
        fc.array(row, { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.constantFrom('', ' ', '\n  ', '\t\r\n'),
        fc.boolean(),
        (rows, mask, ws, reverse) => {
          const body = rows
            .map(
              (r) =>
                `[${ws}${r.map((v) => (typeof v === 'string' ? escapedLiteral(v, mask) : JSON.stringify(v))).join(`${ws},${ws}`)}${ws}]`,
            )
            .join(`,${ws}`);
          const members = Object.entries(envelope([]))
            .filter(([k]) => k !== 'rows')
            .map(([k, v]) => `"${k}"${ws}:${ws}${JSON.stringify(k === 'count' ? rows.length : v)}`);
          members.splice(reverse ? members.length : 3, 0, `"rows":${ws}[${ws}${body}${ws}]`);
          if (reverse) members.reverse();
          agree(Buffer.from(`${ws}{${ws}${members.join(`,${ws}`)}${ws}}${ws}`));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('declines garbled, truncated and hostile bodies without throwing or hanging', () => {
    const valid = JSON.stringify(
      envelope([['nasdaq:aapl', '20240101', '20240101T101010Z', 1.5, true, 'a\nb']]),
    );
    forEachGarbling(valid, (bytes) => {
      agree(bytes);
    });
  });

  it('declines the odd cases the reference treats specially', () => {
    const page = (rows: string, extra = '') =>
      Buffer.from(
        `{"id":"x","state":"complete","total":5,"count":1,"start":1,"limit":5,${extra}"rows":${rows},"fields":${JSON.stringify(fields)}}`,
      );
    const ok = '[["nasdaq:aapl","20240101","20240101T101010Z",1,true,"s"]]';
    expect(fast(page(ok))).toBeDefined();
    for (const bytes of [
      page(ok, '"r\\u006fws":[],'), // an escaped key spelling a member
      page('[["nasdaq:aapl","20240101","20240101T101010Z",1,true]]'), // short row
      page('[["nasdaq:aapl","20240101","20240101T101010Z",1,true,"s",2]]'), // long row
      page('[["nasdaq:aapl","20240230","20240101T101010Z",1,true,"s"]]'), // no such day
      page('[["nasdaq:aapl","20240101","20240101T101010Z","x",true,"s"]]'), // text in a number column
      page('[["nasdaq:aapl","20240101","20240101T101010Z",01,true,"s"]]'), // not JSON
      page('[["nasdaq:aapl","20240101","20240101T101010Z",1,true,"a\u0001"]]'), // raw control char
      page('[["\\ud800","20240101","20240101T101010Z",1,true,"s"]]'), // lone surrogate in a dictionary
      page('[["nasdaq:aapl","20240101","20240101T101010Z",[1],true,"s"]]'), // array value
      Buffer.concat([page(ok), Buffer.from([0xff])]), // not UTF-8
      Buffer.from(`\ufeff${page(ok).toString()}`), // BOM
    ]) {
      expect(fast(bytes)).toBeUndefined();
      agree(bytes);
    }
  });

  it('keeps decoding big pages into recycled buffers (regression: they doubled on every page)', () => {
    const decoder = new FastTableDecoder(plan);
    const rows = Array.from({ length: 20_000 }, (_, i) => [
      'nasdaq:aapl',
      '20240101',
      null,
      i,
      i % 2 === 0,
      `row ${i}`,
    ]);
    const bytes = Buffer.from(JSON.stringify(envelope(rows, { limit: 20_000 })));
    for (let k = 0; k < 12; k++) {
      const page = decoder.decode(bytes, { start: 1, limit: 20_000 });
      expect(page?.length).toBe(20_000);
      const values = page!.columns[3]!;
      expect(values.kind === 'number' && values.values.length).toBeLessThanOrEqual(65_536);
      decoder.recycle(page!);
    }
  });

  it("leaves nothing past a string column's bytes: its buffer is recycled or not zeroed", () => {
    const decoder = new FastTableDecoder(plan);
    const rows = (n: number, text: (i: number) => string) =>
      Array.from({ length: n }, (_, i) => ['nasdaq:aapl', '20240101', null, i, true, text(i)]);
    const at = { start: 1, limit: 2_000 };
    const long = decoder.decode(
      Buffer.from(
        JSON.stringify(
          envelope(
            rows(2_000, (i) => `long ${i} `.repeat(20)),
            at,
          ),
        ),
      ),
      at,
    )!;
    decoder.recycle(long);
    // Shorter strings into the recycled buffers: the long page's bytes lay past their end.
    const short = decoder.decode(
      Buffer.from(
        JSON.stringify(
          envelope(
            rows(2_000, (i) => `s${i}`),
            at,
          ),
        ),
      ),
      at,
    )!;
    const strings = short.columns[5]!;
    if (strings.kind !== 'utf8') throw new Error(`expected a utf8 column, got ${strings.kind}`);
    const end = strings.offsets[short.length]!;
    const whole = new Uint8Array(strings.bytes.buffer, strings.bytes.byteOffset, strings.bytes.byteLength);
    expect(whole.length).toBeGreaterThan(end);
    expect(whole.subarray(end).every((b) => b === 0)).toBe(true);
    expect(Buffer.from(whole.subarray(0, end)).toString()).toBe(
      rows(2_000, (i) => `s${i}`)
        .map((r) => r[5])
        .join(''),
    );
  });

  it('sizes string buffers by the body, not only by the last page (regression: a huge row, then decline)', () => {
    const decoder = new FastTableDecoder(plan);
    const wide = { start: 1, limit: 16_384 };
    const huge = ['nasdaq:aapl', '20240101', '20240101T000000Z', 1, true, 'x'.repeat(300_000)];
    expect(decoder.decode(Buffer.from(JSON.stringify(envelope([huge]))), wide)?.length).toBe(1);
    // 300 kB per row x 16,384 rows was the next page's first guess: over 4 GiB, so the page was declined.
    const small = ['nasdaq:aapl', '20240101', '20240101T000000Z', 1, true, 'short'];
    const body = Buffer.from(JSON.stringify(envelope([small])));
    const page = decoder.decode(body, wide);
    expect(page?.length).toBe(1);
    const strings = page!.columns[5]!;
    expect(strings.kind === 'utf8' && strings.bytes.length).toBeLessThanOrEqual(Math.max(1024, body.length));
  });

  it.each(DATASETS.map((d) => d.id))(
    'gives byte-identical Arrow IPC to the JSON.parse path over HTTP: %s',
    async (dataset) => {
      const { client } = await setup({ seed: 11, rowCap: 4000 });
      const ipcOf = (decoder: 'fast' | 'json', batchSize: number | undefined) =>
        ipcBytes(
          client.stream(
            dataset,
            {},
            { pageSize: 700, concurrency: 3, ...(batchSize ? { batchSize } : {}), decoder },
          ),
        );
      // Batches across pages (appended and flushed), and one batch per page (the page's buffers adopted).
      for (const batchSize of [1000, undefined]) {
        const [a, b] = [await ipcOf('fast', batchSize), await ipcOf('json', batchSize)];
        expect(a.length).toBeGreaterThan(1000);
        expect(a.equals(b)).toBe(true);
      }
      // Row objects too.
      const rowsOf = (decoder: 'fast' | 'json') =>
        allOf(client.stream(dataset, {}, { output: 'rows', pageSize: 700, decoder }));
      const [fastRows, jsonRows] = [await rowsOf('fast'), await rowsOf('json')];
      expect(fastRows.length).toBe(4000);
      expect(fastRows).toEqual(jsonRows);
      // And the fast path really decoded these pages (it did not decline them all).
      const result = await client.query(dataset, {});
      const body = await result.download({ start: 1, limit: 700 });
      const parts: Buffer[] = [];
      for await (const chunk of body) parts.push(chunk as Buffer);
      const planned = planColumns(result.fields);
      const page = new FastTableDecoder(planned).decode(Buffer.concat(parts), { start: 1, limit: 700 });
      expect(page?.length).toBe(700);
    },
  );
});

describe('readTableEnvelope', () => {
  /** The reference envelope, or undefined where `parseTablePage` throws. */
  const referenceEnvelope = (bytes: Buffer) => {
    try {
      return envelopeOf(parseTablePage(bytes.toString('utf8'), where));
    } catch (error) {
      if (error instanceof DecodeError) return undefined;
      throw error;
    }
  };
  /**
   * Read from the bytes, it is the reference's envelope, or it declines (never a different one). Where
   * the reference rejects the page, an envelope may still be read only when what is wrong lies inside
   * `rows` (`rowsAt`: its byte range), which the stream's decoder checks: the same error, one step later.
   */
  const sameOrDeclined = (
    bytes: Buffer,
    mutatedAt?: number,
    rowsAt?: [number, number],
  ): 'read' | 'declined' => {
    const got = readTableEnvelope(bytes);
    const want = referenceEnvelope(bytes);
    if (got === undefined) return 'declined';
    if (want === undefined) {
      expect(mutatedAt, 'read an envelope the reference rejects, outside the rows').toBeDefined();
      expect(mutatedAt).toBeGreaterThanOrEqual(rowsAt![0]);
      // A byte inserted just after the rows' closing bracket lands inside them too.
      expect(mutatedAt).toBeLessThanOrEqual(rowsAt![1]);
      return 'read';
    }
    // `rowCount` is the page's own `count`, not the rows counted: the stream's decoder checks the one
    // against the other on every page (a ProtocolError naming the page).
    const { rowCount, ...read } = got;
    expect(rowCount).toBe(got.count);
    const { rowCount: _counted, ...reference } = want;
    expect(read).toEqual(reference);
    return 'read';
  };

  it('reads the envelope of fuzzed pages as JSON.parse does, rows counted, not parsed', () => {
    let read = 0;
    fc.assert(
      fc.property(fc.array(row, { maxLength: 30 }), (rows) => {
        const bytes = Buffer.from(JSON.stringify(envelope(rows)));
        if (sameOrDeclined(bytes) === 'read') read++;
      }),
      { numRuns: 300 },
    );
    // Row values of the wrong type are the stream's to report, not the envelope's: all were read.
    expect(read).toBe(300);
  });

  it('reads the members around the rows forward: any order, spacing, and quotes or brackets in strings', () => {
    const reserved = ['rows', 'fields', 'total', 'count', 'start', 'last_date_updated'];
    const key = fc.string().filter((k) => !reserved.includes(k) && !/["\\\u0000-\u001f]/.test(k));
    fc.assert(
      fc.property(
        fc.array(row, { maxLength: 5 }),
        fc.array(
          fc.record({
            id: trickyText,
            summary: trickyText,
            options: fc.jsonValue(),
          }),
          {
            minLength: 1,
            maxLength: 4,
          },
        ),
        fc.dictionary(key, fc.jsonValue(), { maxKeys: 3 }),
        fc.array(fc.nat(), { minLength: 16, maxLength: 16 }),
        fc.constantFrom(0, 1, '\t'),
        (rows, descriptors, extra, order, indent) => {
          const page = envelope(rows, { fields: descriptors, ...extra });
          const keys = Object.keys(page).sort(
            (a, b) => order[Object.keys(page).indexOf(a) % 16]! - order[Object.keys(page).indexOf(b) % 16]!,
          );
          const text = JSON.stringify(Object.fromEntries(keys.map((k) => [k, page[k]])), null, indent);
          expect(sameOrDeclined(Buffer.from(text))).toBe('read');
        },
      ),
      { numRuns: 400 },
    );
  });

  it('declines garbled and truncated bodies, never reads a different envelope; leaves rows to the decoder', () => {
    const valid = JSON.stringify(
      envelope([
        ['nasdaq:aapl', '20240101', '20240101T101010Z', 1.5, true, 'a\nb'],
        ['nyse:ge', null, null, -2, false, '\u00e9"'],
      ]),
    );
    const bytes = Buffer.from(valid);
    const rowsAt: [number, number] = [bytes.indexOf('"rows":') + 7, bytes.indexOf(',"fields":')];
    forEachGarbling(valid, (bytes, at) => {
      sameOrDeclined(bytes, at, rowsAt);
    });
  });

  it('declines what JSON.parse reads differently, and what is not a result page', () => {
    const page = (rows: string, extra = '', f = JSON.stringify(fields)) =>
      Buffer.from(
        `{"id":"x","state":"complete","total":5,"count":1,"start":1,"limit":5,${extra}"rows":${rows},"fields":${f},"last_date_updated":"2024-12-31T22:15:00Z"}`,
      );
    const ok = '[["nasdaq:aapl","20240101","20240101T101010Z",1,true,"s"]]';
    expect(readTableEnvelope(page(ok))).toMatchObject({ total: 5, count: 1, start: 1, rowCount: 1 });
    const empty = (rows: string) => Buffer.from(page(rows).toString().replace('"count":1', '"count":0'));
    expect(readTableEnvelope(empty('[]'))?.rowCount).toBe(0);
    expect(readTableEnvelope(empty(' [ ] '))?.rowCount).toBe(0);
    // Brackets and escaped quotes inside strings are not rows.
    expect(readTableEnvelope(page('[["a]\\"[",1],["\\\\",2],[[3]]]'))?.fields).toEqual(fields);
    // What is wrong inside a row is the decoder's to find (the stream reports it, naming the page).
    expect(readTableEnvelope(page('[["a"],[01]]'))?.rowCount).toBe(1);
    expect(readTableEnvelope(page('[["a"],{"b":1}]'))?.rowCount).toBe(1);
    // A member twice, whatever its name (`rows` too): declined, and the reference names it (JSON.parse
    // would keep the last one without a word).
    for (const twice of ['"rows":[],', '"id":"y",', '"state":"complete",']) {
      expect(readTableEnvelope(page(ok, twice))).toBeUndefined();
      expect(() => parseTablePage(page(ok, twice).toString(), { start: 1, limit: 5 })).toThrow(
        /appears more than once/,
      );
    }
    for (const bytes of [
      page(ok, '"count":1,'), // a duplicate member the envelope reports
      empty('[["a"]]'), // rows in an empty page: no decoder would read them
      Buffer.from(page(ok).toString().replace('"count":1', '"count":-1')),
      page(ok, '"r\\u006fws":[],'), // an escaped key spelling a member
      page('{"a":1}'), // rows not an array
      page(ok, '', '[{"name":"a"}]'), // a field without an id
      page(ok, '"total":5.5,').subarray(0), // total not an integer (and a duplicate)
      Buffer.from(`{"total":5,"count":1,"start":1,"fields":[]}`), // no rows
      Buffer.concat([page(ok), Buffer.from([0xff])]), // not UTF-8
      Buffer.from(`\ufeff${page(ok).toString()}`), // BOM
      Buffer.from('[]'),
    ]) {
      expect(readTableEnvelope(bytes)).toBeUndefined();
      sameOrDeclined(bytes);
    }
  });
});
