/**
 * A map bounded by the total weight of its values (bytes, or 1 a value to bound the count), the least
 * recently used value out first: what an isolate keeps for later requests, none of it allowed to grow without
 * bound. A Map's iteration order is its insertion order, so moving a value to the end on every use makes the
 * first entry the least recently used one.
 */
export class Lru<K, V> {
  private readonly values = new Map<K, V>();
  private held = 0;

  constructor(
    private readonly maxWeight: number,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  /** The weight held now. */
  get weight(): number {
    return this.held;
  }

  /** The value of `key`, now the most recently used. */
  get(key: K): V | undefined {
    const value = this.values.get(key);
    if (value === undefined) return undefined;
    this.values.delete(key);
    this.values.set(key, value);
    return value;
  }

  /** Keeps `value` as the most recently used, dropping the least recently used until the bound holds again; a value heavier than the bound is not kept. */
  set(key: K, value: V): void {
    this.delete(key);
    const weight = this.weigh(value);
    if (weight > this.maxWeight) return;
    this.values.set(key, value);
    this.held += weight;
    for (const [oldest, dropped] of this.values) {
      if (this.held <= this.maxWeight) break;
      this.values.delete(oldest);
      this.held -= this.weigh(dropped);
    }
  }

  delete(key: K): void {
    const value = this.values.get(key);
    if (value === undefined) return;
    this.values.delete(key);
    this.held -= this.weigh(value);
  }

  /** Drops every value that `matches`. */
  deleteWhere(matches: (value: V, key: K) => boolean): void {
    for (const [key, value] of this.values) if (matches(value, key)) this.delete(key);
  }

  clear(): void {
    this.values.clear();
    this.held = 0;
  }
}
