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
}

export interface StoredFlagRow {
  scope: string
  key: string
  flag: StoredFlag
  json: string
  revision: number
}
