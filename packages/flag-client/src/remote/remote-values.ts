import type { ClientFlag, KeyValueStorage } from '../types.js'

/** The values of one context as the server evaluated them, and the ETag that answer had. */
export interface StoredValues {
  /** The OFREP base URL and key they came from: another server's or key's values are never served. */
  id: string
  etag: string | null
  flags: ClientFlag[]
  savedAt: number
}

/** The context as OFREP sends it: `user_id` (the bucketing id) travels as `targetingKey`. */
export function toOfrepContext(context: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { user_id, ...rest } = context
  return user_id === undefined || user_id === null ? rest : { ...rest, targetingKey: String(user_id) }
}

/** A name for a context that does not show it (attributes in key order: `{a, b}` and `{b, a}` agree). */
export function contextHash(context: Readonly<Record<string, unknown>>): string {
  const text = JSON.stringify(Object.entries(context).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  // cyrb53: two 32-bit lanes, 53 bits; a collision would need the same hash for another context of this key.
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36)
}

/**
 * The last values of the most recent contexts in `localStorage`, one entry per context under a hash of it (the
 * context itself is not stored), and an index of those hashes, newest last, bounded to `max`. Synchronous, so a
 * client started offline answers during creation. Storage that throws (blocked, quota) is passed over.
 */
export class ValueStore {
  constructor(
    private readonly storage: KeyValueStorage | undefined,
    private readonly prefix: string,
    private readonly id: string,
    private readonly max: number,
  ) {}

  load(hash: string): StoredValues | undefined {
    try {
      const saved = JSON.parse(this.storage?.getItem(this.#key(hash)) ?? 'null') as StoredValues | null
      if (saved?.id === this.id && saved.flags.every((f) => typeof f?.key === 'string')) return saved
    } catch {}
    return undefined
  }

  save(hash: string, values: StoredValues): void {
    const storage = this.storage
    if (!storage) return
    try {
      const index = this.#index().filter((h) => h !== hash)
      index.push(hash)
      for (const old of index.splice(0, Math.max(0, index.length - this.max))) storage.removeItem(this.#key(old))
      storage.setItem(this.#key(hash), JSON.stringify(values))
      storage.setItem(`${this.prefix}:index`, JSON.stringify(index))
    } catch {}
  }

  #index(): string[] {
    try {
      const index: unknown = JSON.parse(this.storage?.getItem(`${this.prefix}:index`) ?? '[]')
      return Array.isArray(index) ? index.filter((h): h is string => typeof h === 'string') : []
    } catch {
      return []
    }
  }

  #key(hash: string): string {
    return `${this.prefix}:${hash}`
  }
}
