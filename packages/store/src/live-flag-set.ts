import { createHash } from 'node:crypto'
import type { FlagChange, StoredFlag, StoredFlagRow } from './types.js'

export interface LiveEntry {
  flag: StoredFlag
  /** The flag serialized once at write time. */
  json: string
  revision: number
}

export interface SerializedList {
  body: Buffer
  etag: string
}

/**
 * The in-memory set of current flags, per scope. List responses are built
 * from the pre-serialized entries and cached until the scope changes, so a
 * list request costs one buffer write however many flags there are.
 */
export class LiveFlagSet {
  private readonly scopes = new Map<string, Map<string, LiveEntry>>()
  private readonly listCache = new Map<string, SerializedList>()
  private revisionValue = 0

  get revision(): number {
    return this.revisionValue
  }

  replaceAll(rows: StoredFlagRow[], revision: number): void {
    this.scopes.clear()
    this.listCache.clear()
    for (const row of rows)
      this.entries(row.scope).set(row.key, { flag: row.flag, json: row.json, revision: row.revision })
    this.revisionValue = revision
  }

  apply(change: FlagChange): void {
    const entries = this.entries(change.scope)
    if (change.flag && change.json !== null) {
      entries.set(change.key, { flag: change.flag, json: change.json, revision: change.revision })
    } else {
      entries.delete(change.key)
    }
    this.listCache.delete(change.scope)
    this.revisionValue = Math.max(this.revisionValue, change.revision)
  }

  get(key: string, scope = ''): LiveEntry | undefined {
    return this.scopes.get(scope)?.get(key)
  }

  /** Entries of a scope in key order (stable for clients and tests). */
  list(scope = ''): LiveEntry[] {
    const entries = this.scopes.get(scope)
    if (!entries) return []
    return [...entries.keys()].sort().map((k) => entries.get(k) as LiveEntry)
  }

  size(scope = ''): number {
    return this.scopes.get(scope)?.size ?? 0
  }

  /** The scope's flags as a JSON array, with a strong ETag of its content. */
  serializedList(scope = ''): SerializedList {
    const cached = this.listCache.get(scope)
    if (cached) return cached
    const body = Buffer.from(
      `[${this.list(scope)
        .map((e) => e.json)
        .join(',')}]`,
    )
    const etag = `"${createHash('sha1').update(body).digest('base64url')}"`
    const list = { body, etag }
    this.listCache.set(scope, list)
    return list
  }

  private entries(scope: string): Map<string, LiveEntry> {
    let entries = this.scopes.get(scope)
    if (!entries) {
      entries = new Map()
      this.scopes.set(scope, entries)
    }
    return entries
  }
}
