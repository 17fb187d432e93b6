import type { Role } from '../auth/context.js'
import { iso, type Num } from '../records.js'

export interface UserRow {
  id: Num
  email: string
  name: string
  role: Role
  password_hash: string
  created_at: Num
}

export interface UserJson {
  id: number
  name: string
  email: string
  role: Role
  created_at: string
}

/** The password hash never leaves this function. */
export const userJson = (row: UserRow): UserJson => ({
  id: Number(row.id),
  name: row.name,
  email: row.email,
  role: row.role,
  created_at: iso(row.created_at),
})
