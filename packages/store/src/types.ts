/** Any flag-shaped JSON object: the store does not interpret fields beyond `key`. */
export interface StoredFlag {
  key: string
  [field: string]: unknown
}

/** One committed change, as written to the change log and fed to streams. */
export interface FlagChange {
  revision: number
  scope: string
  key: string
  /** The flag after the change; null when it was deleted. */
  flag: StoredFlag | null
  /** `flag` serialized once, reused for every subscriber and list response. */
  json: string | null
  /** The change's own audit context (`FlagWriter.withAudit`); absent: the write's. */
  audit?: AuditContext
}

export interface StoredFlagRow {
  scope: string
  key: string
  flag: StoredFlag
  json: string
  revision: number
}

/**
 * Who made a write and through what, stored on each change-log row the write
 * appends (the audit trail costs columns, not rows). One per write, unless a
 * change was staged with its own (`FlagWriter.withAudit`).
 */
export interface AuditContext {
  /** The authenticated identity: a token's name, a user. */
  actor?: string | null
  /** An identity the client declared (e.g. `X-Flagsync-Actor`), recorded as sent and never verified. */
  declaredActor?: string | null
  /** What made the change: `api:PATCH /api/flags/:key`, `sync`, … */
  source?: string | null
  /** The sync batch the change came from. */
  batchId?: string | null
}

/** A record's state at some revision, as far as the change log still knows it. */
export interface StateAt {
  /** The flag at that revision; null when it did not exist. Meaningless unless `known`. */
  flag: StoredFlag | null
  /** False when pruning removed what the log needed to tell. */
  known: boolean
}
