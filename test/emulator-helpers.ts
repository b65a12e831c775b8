/** Shared plumbing for the emulator tests: plain `fetch` and `node:http`, never our client. */
import { request } from 'node:http';
import { afterEach } from 'vitest';
import { type Emulator, type EmulatorOptions, startEmulator } from '../src/emulator/index.js';

export const TABLE = 'application/vnd.service.table+json';
export const MAP = 'application/vnd.service.map+json';
export const CSV = 'text/csv';
export const XLS = 'application/vnd.ms-excel';
export const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

const running: Emulator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((e) => e.close()));
});

/** An emulator on 127.0.0.1:0, closed after the test that started it. */
export async function startTestEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator(options);
  running.push(emu);
  return emu;
}

export function authHeaders(emu: Emulator, extra: Record<string, string> = {}): Record<string, string> {
  return { Authorization: `token ${emu.apiKey}`, 'X-API-Version': '20151130', ...extra };
}

export function get(emu: Emulator, path: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${emu.url}${path}`, { headers: authHeaders(emu, headers) });
}

export function head(emu: Emulator, path: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${emu.url}${path}`, { method: 'HEAD', headers: authHeaders(emu, headers) });
}

export function post(
  emu: Emulator,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${emu.url}${path}`, {
    method: 'POST',
    headers: authHeaders(emu, { 'Content-Type': 'application/json', Accept: 'application/json', ...headers }),
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export interface Handle {
  id: string;
  state: string;
  total: number;
  formats: string[];
}

export async function createQuery(emu: Emulator, datasetId: string, body: unknown = {}): Promise<Handle> {
  const res = await post(emu, `/datasets/${datasetId}/query/`, body);
  if (res.status !== 200) throw new Error(`POST answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Handle;
}

/** GET a result page in `accept`, failing loudly on a non-200. */
export async function page(
  emu: Emulator,
  datasetId: string,
  id: string,
  params: string,
  accept: string = TABLE,
): Promise<Response> {
  const res = await get(emu, `/datasets/${datasetId}/query/${id}${params}`, { Accept: accept });
  if (res.status !== 200) throw new Error(`GET answered ${res.status}: ${await res.text()}`);
  return res;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request with the path sent byte for byte (fetch would normalise `..` and friends). */
export function rawRequest(
  emu: Emulator,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: emu.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `{message}` of an error response, checking the error shape on the way. */
export async function errorMessage(res: Response): Promise<string> {
  const contentType = res.headers.get('content-type') ?? '';
  if (!contentType.startsWith('application/json')) throw new Error(`error body is ${contentType}`);
  const body = (await res.json()) as { message?: unknown };
  if (typeof body.message !== 'string') throw new Error(`error body has no message: ${JSON.stringify(body)}`);
  return body.message;
}
