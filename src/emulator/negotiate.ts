import { type FormatName, MediaType } from '../core/wire.js';

interface MediaRange {
  readonly type: string;
  readonly q: number;
}

function parseAccept(accept: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.split(';').map((s) => s.trim());
    if (type === '') continue;
    let q = 1;
    for (const param of params) {
      const m = /^q\s*=\s*([0-9.]+)$/i.exec(param);
      if (m) q = Number(m[1]);
    }
    if (Number.isFinite(q) && q > 0) ranges.push({ type: type.toLowerCase(), q });
  }
  // Stable: equal weights keep the client's order.
  return ranges.sort((a, b) => b.q - a.q);
}

const BY_MEDIA_TYPE = new Map<string, FormatName>(
  Object.entries(MediaType).map(([name, type]) => [type, name as FormatName]),
);

/**
 * The format to answer with: a missing `Accept`, `*\/*` or `application/json` mean table JSON; otherwise
 * the first (by weight, then order) range naming an offered type; `type/*` ranges match by their prefix.
 * `undefined` when nothing offered is acceptable.
 */
export function negotiate(
  accept: string | undefined,
  offered: readonly FormatName[],
): FormatName | undefined {
  if (accept === undefined || accept.trim() === '') return offered.includes('table') ? 'table' : offered[0];
  for (const { type } of parseAccept(accept)) {
    if (type === '*/*' || type === 'application/json') {
      if (offered.includes('table')) return 'table';
      if (type === '*/*') return offered[0];
      continue;
    }
    if (type.endsWith('/*')) {
      const prefix = type.slice(0, -1);
      const match = offered.find((f) => MediaType[f].startsWith(prefix));
      if (match) return match;
      continue;
    }
    const format = BY_MEDIA_TYPE.get(type);
    if (format && offered.includes(format)) return format;
  }
  return undefined;
}
