/**
 * `rawBody()`: the explicit way to send query body members the spec does not show. A plain body holds
 * the spec's `tickers` only and refuses anything else, so that a typo cannot go unnoticed; a deployment
 * that takes more (`filters`, `sorts`, `groups`, …) is sent them through this wrapper, as given.
 */
import { InvalidArgumentError } from './errors.js';
import { checkObject, invalid } from './validate.js';
import type { WireBody } from './wire.js';

/** A query body whose every member is sent as given (`tickers` is still checked). Made by `rawBody()`. */
export class RawQueryBody {
  // A private field makes the type nominal: a plain `{ members }` object is not a RawQueryBody.
  readonly #members: WireBody;

  /** @internal Use `rawBody()`. */
  constructor(members: WireBody) {
    this.#members = members;
  }

  /** The members, as they are sent. */
  get members(): WireBody {
    return this.#members;
  }

  toJSON(): WireBody {
    return this.#members;
  }
}

/**
 * A query body with members the spec does not show, sent as given, e.g. for a deployment that filters:
 * `client.query('job_listings', rawBody({ tickers: ['nasdaq:aapl'], filters: [...] }))`. The members
 * are copied (a later change to the object is not sent); the result cache keys its entries by all of them.
 *
 * @example const result = await client.query('job_listings', rawBody({ tickers: ['nasdaq:aapl'], sorts: [] }));
 */
export function rawBody(members: Readonly<Record<string, unknown>>): RawQueryBody {
  return new RawQueryBody(Object.freeze({ ...checkObject(members, 'members') }));
}

/**
 * The `body` option of the calls that add each query's tickers themselves (`queryEach`,
 * `exportPartitioned`): members the spec does not show, as a `rawBody()`, without `tickers`.
 */
export function checkOtherMembers(value: unknown, argument = 'body'): RawQueryBody | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof RawQueryBody)) {
    throw invalid(argument, 'a rawBody({ … }) of the members to send besides `tickers`', value);
  }
  if ('tickers' in value.members) {
    throw new InvalidArgumentError(argument, 'Expected no `tickers` in `body`: pass them as `tickers`');
  }
  return value;
}

/** One query's body: `tickers`, with the other members when there are. */
export function withTickers(
  other: RawQueryBody | undefined,
  tickers: readonly string[],
): { readonly tickers: readonly string[] } | RawQueryBody {
  return other === undefined ? { tickers } : new RawQueryBody({ ...other.members, tickers });
}
