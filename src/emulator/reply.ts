/** A response as data: routes return one, the server transmits it (possibly with a fault applied). */
export interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** `null`: no body at all (a HEAD check). */
  readonly body: Buffer | null;
  /** Close the connection afterwards, e.g. when an oversized request body was left unread. */
  readonly close?: boolean;
  /** The page cache's key of `body`, so its compressed forms are cached beside it. */
  readonly cacheKey?: string;
  /** Rows of a result page: its execution time (`pageTimeMs`, `rowTimeMs`) depends on them. */
  readonly rows?: number;
}

/** On every response, as the spec's HEAD sample shows it. */
export const HSTS = { 'Strict-Transport-Security': 'max-age=15768000' } as const;

export function jsonReply(
  status: number,
  value: unknown,
  headers: Readonly<Record<string, string>> = {},
): Reply {
  return {
    status,
    headers: { ...HSTS, 'Content-Type': 'application/json', ...headers },
    body: Buffer.from(JSON.stringify(value), 'utf8'),
  };
}

/** Every error is `application/json` `{ "message": "..." }`. */
export function errorReply(
  status: number,
  message: string,
  headers: Readonly<Record<string, string>> = {},
): Reply {
  return jsonReply(status, { message }, headers);
}
