import type { Role, TokenScope } from './auth/context.js'
import type { SdkKeyKind } from './auth/secrets.js'

// Rows as the database returns them (PostgreSQL hands bigints back as strings
// and booleans as booleans, SQLite numbers for both) and the JSON the API sends.

type Num = number | string
type Bool = boolean | number

export const iso = (ms: Num): string => new Date(Number(ms)).toISOString()
export const isoOrNull = (ms: Num | null | undefined): string | null =>
  ms === null || ms === undefined ? null : iso(ms)

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

export interface ProjectRow {
  id: string
  name: string
  slug: string
  created_at: Num
  environment_count?: Num
  member_count?: Num
}

export const projectJson = (row: ProjectRow) => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  environment_count: Number(row.environment_count ?? 0),
  member_count: Number(row.member_count ?? 0),
  created_at: iso(row.created_at),
})

export interface EnvironmentRow {
  id: string
  project_id: string
  name: string
  slug: string
  color: string
  is_default: Bool
  require_approval: Bool
  position?: Num
  created_at: Num
}

export const environmentJson = (row: EnvironmentRow) => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  color: row.color,
  is_default: Boolean(row.is_default),
  require_approval: Boolean(row.require_approval),
  created_at: iso(row.created_at),
})

export interface SdkKeyRow {
  id: Num
  project_id: string
  environment_id: string
  environment_name: string
  name: string
  kind: SdkKeyKind
  prefix: string
  created_at: Num
}

export const sdkKeyJson = (row: SdkKeyRow) => ({
  id: Number(row.id),
  name: row.name,
  kind: row.kind,
  prefix: row.prefix,
  environment_id: row.environment_id,
  environment_name: row.environment_name,
  created_at: iso(row.created_at),
})

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
