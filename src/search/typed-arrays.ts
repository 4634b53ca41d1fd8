/** Growing the typed arrays the search index keeps per slot, per word or per list. */

type Growable = Uint8Array | Uint16Array | Uint32Array | Int32Array;

/** A new array of `length` (at least the old one's) holding `array`'s values first, the rest `fill`. */
export function grown<T extends Growable>(array: T, length: number, fill = 0): T {
  const out = new (array.constructor as new (length: number) => T)(length);
  if (fill !== 0) out.fill(fill, array.length);
  out.set(array);
  return out;
}
