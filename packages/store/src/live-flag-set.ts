import { createHash } from 'node:crypto'
import type { FlagChange, StoredFlag, StoredFlagRow } from './types.js'

export interface LiveEntry {
  flag: StoredFlag
  /** The flag serialized once at write time (with its `revision` when the set was made with `revisionInJson`). */
  json: string
  revision: number
}

export interface LiveFlagSetOptions {
  /**
   * Add the read-only `revision` (of the flag's last change) to each entry's
   * JSON, so every list, single-flag and stream answer carries it.
   */
  revisionInJson?: boolean
}

/**
 * A flag object's JSON with `"revision":n` appended: string work on the JSON
 * serialized once at write time, not a second serialization. The stored
 * JSON never holds a `revision` field (inputs drop it), so it cannot repeat.
 */
export function withRevision(json: string, revision: number): string {
  return json.length > 2 ? `${json.slice(0, -1)},"revision":${revision}}` : `{"revision":${revision}}`
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
  private readonly revisionInJson: boolean

  constructor(options: LiveFlagSetOptions = {}) {
    this.revisionInJson = options.revisionInJson ?? false
  }

  private entry(flag: StoredFlag, json: string, revision: number): LiveEntry {
    return { flag, json: this.revisionInJson ? withRevision(json, revision) : json, revision }
  }

  get revision(): number {
    return this.revisionValue
  }

  replaceAll(rows: StoredFlagRow[], revision: number): void {
    this.scopes.clear()
    this.listCache.clear()
    for (const row of rows) this.entries(row.scope).set(row.key, this.entry(row.flag, row.json, row.revision))
    this.revisionValue = revision
  }

  apply(change: FlagChange): void {
    const entries = this.entries(change.scope)
    if (change.flag && change.json !== null) {
      entries.set(change.key, this.entry(change.flag, change.json, change.revision))
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
