/**
 * Lists of slots by key (a trigram's or a stem's labels, a word's names), appended to as names come
 * and cleaned lazily: a slot that leaves a key's list counts as stale there (`stale`), and the
 * list is filtered by `holds` once half of it is stale. A reader checks each slot against what it
 * holds now, so a stale or repeated entry is never a wrong answer. Each list a typed array grown
 * by doubling (at 1M names ~14M entries: 4 bytes each rather than a JS array's 8).
 * A key with one slot (most stems: a run-together label is a stem of its own) keeps the slot
 * itself, not a list: a typed array and its object cost some 200 bytes, per name at 1M.
 */
import { grown } from './typed-arrays';

export class Lists<K> {
  private readonly lists = new Map<K, number | { slots: Uint32Array; length: number; stale: number }>();

  /** `holds(slot, key)`: whether what the slot holds now still belongs in the key's list. */
  constructor(private readonly holds: (slot: number, key: K) => boolean) {}

  get(key: K): Uint32Array {
    const list = this.lists.get(key);
    if (list === undefined) return EMPTY;
    return typeof list === 'number' ? Uint32Array.of(list) : list.slots.subarray(0, list.length);
  }

  add(key: K, slot: number): void {
    let list = this.lists.get(key);
    if (list === undefined) {
      this.lists.set(key, slot);
      return;
    }
    if (typeof list === 'number') this.lists.set(key, (list = { slots: Uint32Array.of(list, 0, 0, 0), length: 1, stale: 0 }));
    if (list.length === list.slots.length) {
      list.slots = grown(list.slots, list.slots.length * 2);
    }
    list.slots[list.length++] = slot;
  }

  /** Each list down to its length (the doubling's slack: up to half of it), once the lists stop growing fast. */
  trim(): void {
    for (const list of this.lists.values()) if (typeof list !== 'number' && list.length < list.slots.length) list.slots = list.slots.slice(0, list.length);
  }

  /** One of the key's entries is stale now. */
  stale(key: K): void {
    const list = this.lists.get(key);
    if (list === undefined) return;
    // A list of one with its one entry stale (more than half): kept only if it still holds.
    if (typeof list === 'number') {
      if (!this.holds(list, key)) this.lists.delete(key);
      return;
    }
    if (++list.stale * 2 <= list.length) return;
    const seen = new Set<number>();
    let kept = 0;
    for (let i = 0; i < list.length; i++) {
      const slot = list.slots[i];
      if (seen.has(slot) || !this.holds(slot, key)) continue;
      seen.add(slot);
      list.slots[kept++] = slot;
    }
    list.length = kept;
    list.stale = 0;
    if (kept === 0) this.lists.delete(key);
    else if (kept * 4 < list.slots.length) list.slots = list.slots.slice(0, kept * 2);
  }
}

const EMPTY = new Uint32Array(0);
