import type { ConflictRow } from './outbox-schema.js'
import type { Conflict } from './types.js'

export type { ConflictReport } from './conflict-ops.js'

export function toConflict(row: ConflictRow): Conflict {
  const { key: _key, sources: _sources, ...conflict } = row
  return conflict as Conflict
}
