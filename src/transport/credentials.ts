/**
 * The credential each request carries: the API key, or the `token` provider's latest answer, asked again
 * once for everyone when a 401 says the token expired.
 */
import { DqsError } from '../core/errors.js';
import { registerSecret } from '../core/redact.js';

export class Credentials {
  readonly #apiKey: string | undefined;
  readonly #provider: (() => string | Promise<string>) | undefined;
  #token: string | undefined;
  /** The `token` provider's call in progress, shared by every request that needs its answer. */
  #tokenCall: Promise<string> | undefined;

  constructor(apiKey: string | undefined, provider: (() => string | Promise<string>) | undefined) {
    this.#apiKey = apiKey;
    this.#provider = provider;
  }

  /** Whether a 401 can be answered by asking the provider again. */
  get refreshable(): boolean {
    return this.#provider !== undefined;
  }

  /**
   * The credential for the next request: the key, or the `token` provider's latest answer. `stale` is
   * the token a 401 came back for: the provider is asked again only if that is still the latest one,
   * and once for everyone (single flight): with 64 requests in flight when a token expires, their 64
   * 401s make one call, and they all wait for its answer.
   */
  async current(stale?: string): Promise<string | undefined> {
    const provider = this.#provider;
    if (!provider) return this.#apiKey;
    if (this.#token !== undefined && this.#token !== stale) return this.#token;
    this.#tokenCall ??= this.#callProvider(provider).finally(() => {
      this.#tokenCall = undefined;
    });
    return this.#tokenCall;
  }

  async #callProvider(provider: () => string | Promise<string>): Promise<string> {
    try {
      const token: unknown = await provider();
      if (typeof token !== 'string' || !/^[\x20-\x7e]+$/.test(token)) {
        throw new Error(
          `it returned ${typeof token === 'string' ? 'a string that is not printable ASCII' : typeof token}`,
        );
      }
      registerSecret(token);
      this.#token = token;
      return token;
    } catch (cause) {
      throw new DqsError('DQS_AUTH', 'The `token` provider failed', { cause });
    }
  }
}
