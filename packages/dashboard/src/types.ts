import type { FullFlag } from '@flagsync/protocol'

export type Role = 'admin' | 'editor' | 'viewer'

export interface Me {
  id: number
  email: string
  name: string
  role: Role
  workspace_name: string
}

export interface Project {
  id: string
  name: string
  slug: string
  environment_count: number
  member_count: number
  created_at: string
}

export interface Environment {
  id: string
  name: string
  slug: string
  color: string
  is_default: boolean
  require_approval: boolean
  created_at: string
}

export interface Member {
  user_id: number
  email: string
  name: string
  role: Role
}

export interface SdkKey {
  id: number
  name: string
  /** 'server' (sk_live_…, acts as a project admin) or 'client' (pk_live_…, evaluates and reports only; may be in a page). */
  kind: 'server' | 'client'
  prefix: string
  environment_id: string
  environment_name: string
  created_at: string
  key?: string
}

export interface ChangeRequest {
  id: number
  flag_key: string
  status: 'pending' | 'approved' | 'rejected' | 'cancelled'
  patch: Record<string, unknown>
  requested_by: string
  reviewed_by: string | null
  created_at: string
  reviewed_at: string | null
  reason?: string | null
}

/** Why a flag reads as stale in an environment, and since when (the service's `STALE_AFTER_DAYS` decides). */
export interface Stale {
  reason: 'one_value' | 'not_evaluated'
  since: string
}

/** What a REST read of a flag carries beside its definition: project-level tags and owner, and its lifecycle here. */
export interface FlagLifecycle {
  tags: string[]
  owner: number | null
  last_changed_at: string
  last_evaluated_at: string | null
  stale: Stale | null
}

/** A flag as the service stores and answers it (every default filled in, plus its revision; a REST read, its lifecycle). */
export type Flag = FullFlag & { revision?: number; created_at?: string; updated_at?: string } & Partial<FlagLifecycle>

/** An archived flag as `GET …/flags?archived=true` lists it: its definition there, and when and by whom. */
export type ArchivedFlag = FullFlag & {
  tags: string[]
  owner: number | null
  archived: { at: string; by: string | null }
}
