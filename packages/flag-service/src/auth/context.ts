import type { SdkKeyKind } from './secrets.js'

/** Workspace roles and project roles share one ladder. */
export const ROLES = ['viewer', 'editor', 'admin'] as const
export type Role = (typeof ROLES)[number]

const RANK: Record<Role, number> = { viewer: 1, editor: 2, admin: 3 }

/** Whether `role` is at least `min` on the viewer < editor < admin ladder. */
export function roleAtLeast(role: Role, min: Role): boolean {
  return RANK[role] >= RANK[min]
}

export const TOKEN_SCOPES = ['read_only', 'read_write'] as const
export type TokenScope = (typeof TOKEN_SCOPES)[number]

export interface AuthUser {
  id: number
  email: string
  name: string
  role: Role
}

/** Who is calling, set on `req.auth` by `authenticate`. */
export interface AuthContext {
  kind: 'session' | 'pat' | 'sdk_key'
  /** The user (session or personal access token); absent for an SDK key. */
  user?: AuthUser
  /** Sessions only: the SHA-256 of the cookie's value, so a write can check the session still stands. */
  sessionHash?: string
  /** Personal access tokens only. */
  tokenScope?: TokenScope
  tokenId?: number
  /** SDK keys only: the environment the key is bound to, its project and its kind. */
  sdkKey?: { id: number; environmentId: string; projectId: string; kind: SdkKeyKind }
}

/** A project the caller may see, with the role they act with in it (set by `loadProject`). */
export interface ProjectAccess {
  id: string
  name: string
  slug: string
  role: Role
}

/** An environment the caller may see, its project and the caller's role there (set by `loadEnvironment`). */
export interface EnvironmentAccess {
  id: string
  projectId: string
  name: string
  slug: string
  isDefault: boolean
  requireApproval: boolean
  role: Role
}

declare global {
  namespace Express {
    interface Request {
      auth?: AuthContext
      project?: ProjectAccess
      environment?: EnvironmentAccess
    }
  }
}
