import type { TokenScope } from '../auth/context.js'
import { iso, isoOrNull, type Num } from '../records.js'

export interface TokenRow {
  id: Num
  user_id: Num
  name: string
  scope: TokenScope
  prefix: string
  created_at: Num
  last_used_at: Num | null
  expires_at: Num | null
}

export const tokenJson = (row: TokenRow) => ({
  id: Number(row.id),
  name: row.name,
  prefix: row.prefix,
  scope: row.scope,
  created_at: iso(row.created_at),
  last_used_at: isoOrNull(row.last_used_at),
  expires_at: isoOrNull(row.expires_at),
})
