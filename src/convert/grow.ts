/** Typed arrays that column buffers are made of. */
export type TypedArray = Float64Array | Int32Array | BigInt64Array | Uint8Array;

/**
 * A longer copy of `array` holding at least `needed` elements, for amortised O(1) appends: at least
 * twice as long (and at least `min`), doubled until `needed` fits. Always longer, even when `needed`
 * already fits: callers that grow two arrays together (a dictionary's hashes and offsets) rely on it.
 * Copies the first `used` elements (all by default). The one growth rule of column buffers, for the
 * builders (convert/) and the fast decoders (decode/).
 */
export function grow<T extends TypedArray>(array: T, needed: number, used = array.length, min = 16): T {
  const next = new (array.constructor as new (n: number) => T)(grownCapacity(array.length, needed, min));
  next.set((used === array.length ? array : array.subarray(0, used)) as never);
  return next;
}

/** The length `grow()` gives an array of `length` elements that must hold `needed`. */
export function grownCapacity(length: number, needed: number, min = 16): number {
  let capacity = Math.max(min, length * 2);
  while (capacity < needed) capacity *= 2;
  return capacity;
}
