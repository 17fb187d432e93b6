import type { Role } from '../auth/context.js'
import type { Num } from '../records.js'

export interface MemberRow {
  user_id: Num
  name: string
  email: string
  role: Role
}

export const memberJson = (row: MemberRow) => ({
  user_id: Number(row.user_id),
  name: row.name,
  email: row.email,
  role: row.role,
})
