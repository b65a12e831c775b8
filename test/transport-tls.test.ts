/**
 * Company CAs: the emulator serves HTTPS with a certificate from a throwaway CA. Untrusted, the client
 * says so, names the issuer and how to pass the CA; with `ca` it connects; a certificate for another name
 * is a clear error. Verification is never turned off.
 */
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ConnectionError, DatasetClient } from '../src/index.js';
import { expectRejects, setup } from './helpers.js';
import { makePki } from './tls-helpers.js';

const pki = makePki();
afterAll(() => rmSync(pki.dir, { recursive: true, force: true }));

describe('TLS with a company CA', () => {
  it('a certificate from a CA not trusted: DQS_TLS_UNTRUSTED, naming the issuer, the inspection and the fix', async () => {
    const { client } = await setup({ tls: pki.server }, { retry: false });
    expect(client.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/$/);
    const err = await expectRejects<ConnectionError>(client.listDatasets(), () => {});
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.code).toBe('DQS_TLS_UNTRUSTED');
    expect(err.message).toContain('issued by Acme Corp / Acme Corp TLS Inspection Root CA');
    expect(err.message).toContain('looks like a TLS-inspecting proxy');
    // The library names its option; the CLI names --ca-file (cli-tls-messages.test.ts).
    expect(err.message).toContain('pass the CA that issued it: `ca`, or NODE_EXTRA_CA_CERTS=PATH');
  });

  it('the `ca` option (PEM text) makes it trusted, public roots kept', async () => {
    const { client } = await setup({ tls: pki.server }, { ca: pki.ca });
    const datasets = await client.listDatasets();
    expect(datasets.length).toBeGreaterThan(0);
  });

  it('a whole result reads over TLS with `ca` (a Buffer)', async () => {
    const { client } = await setup({ tls: pki.server }, { ca: Buffer.from(pki.ca) });
    const result = await client.query('store_locations', { tickers: ['nyse:wmt'] });
    const table = await result.toTable();
    expect(table.numRows).toBe(result.total);
  });

  it('a certificate for another name: DQS_TLS_HOSTNAME, naming the names it is for', async () => {
    const { client } = await setup({ tls: pki.otherName }, { ca: pki.ca, retry: false });
    const err = await expectRejects<ConnectionError>(client.listDatasets(), () => {});
    expect(err.code).toBe('DQS_TLS_HOSTNAME');
    expect(err.message).toContain('is not for 127.0.0.1 but for DNS:other.example');
  });

  it('`ca` without a PEM certificate is refused before any request', () => {
    expect(() => new DatasetClient({ baseUrl: 'https://example.com', ca: 'not a cert' })).toThrow(
      /Invalid `ca`: Expected PEM text/,
    );
  });
});
