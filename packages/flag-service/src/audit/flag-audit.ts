import { declaredActor } from '@flagsync/server-kit'
import { type AuditContext, type FlagChange, withRevision } from '@flagsync/store'
import type { Request } from 'express'
import type { Knex } from 'knex'
import type { AuthContext } from '../auth/context.js'
import { authOf } from '../auth/guards.js'
import { SERVICE_TABLES } from '../tables.js'

/**
 * Who acts, with the two names the service gives a caller, both read at write
 * time (a renamed or deleted key or token keeps the name it had):
 * - `name`, the audit trail's: the user's email (with the token's name when a
 *   personal access token was used), or the SDK key's name and display prefix;
 * - `label`, a change request's `requested_by`/`reviewed_by`: the email, or
 *   the SDK key's display prefix.
 */
export interface Actor {
  name: string
  label: string
  userId: number | null
  keyId: number | null
  workspaceAdmin: boolean
}

export async function actorOf(knex: Knex, auth: AuthContext): Promise<Actor> {
  const { user } = auth
  if (user) {
    const who = { label: user.email, userId: user.id, keyId: null, workspaceAdmin: user.role === 'admin' }
    if (auth.kind !== 'pat' || auth.tokenId === undefined) return { ...who, name: user.email }
    const token = (await knex(SERVICE_TABLES.tokens).where('id', auth.tokenId).first('name')) as
      | { name: string }
      | undefined
    return { ...who, name: `${user.email} (token ${JSON.stringify(token?.name ?? String(auth.tokenId))})` }
  }
  const keyId = auth.sdkKey?.id ?? 0
  const key = (await knex(SERVICE_TABLES.sdkKeys).where('id', keyId).first('name', 'prefix')) as
    | { name: string; prefix: string }
    | undefined
  return {
    name: key ? `SDK key ${JSON.stringify(key.name)} (${key.prefix})` : `SDK key ${keyId}`,
    label: key?.prefix ?? `sdk key ${keyId}`,
    userId: null,
    keyId,
    workspaceAdmin: false,
  }
}

/**
 * Who and through what, for a service route's write: `source` is
 * `api:<METHOD> <route template>` (e.g. `api:PATCH /api/environments/:env_id/flags/:key`),
 * or what the caller names (`change-request:<id>`).
 */
export async function auditOf(knex: Knex, req: Request, source?: string): Promise<AuditContext> {
  return {
    actor: (await actorOf(knex, authOf(req))).name,
    declaredActor: declaredActor(req),
    source: source ?? `api:${req.method} ${routeOf(req)}`,
  }
}

/** The route template a request matched, mount path included (`/api/environments/:env_id/flags/:key`). */
function routeOf(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path
  const tail = typeof path === 'string' && path !== '/' ? path : ''
  return `${mountPathOf(req)}${tail}`
}

function mountPathOf(req: Request): string {
  // baseUrl holds the concrete ids; put the parameter names back for a template that groups entries.
  let base = req.baseUrl
  for (const [name, value] of Object.entries(req.params ?? {})) {
    if (typeof value === 'string' && value !== '' && name !== 'key' && name !== 'id') {
      base = base.split(`/${value}`).join(`/:${name}`)
    }
  }
  return base
}

/**
 * A body's read-only `revision` is accepted and ignored, so a flag read with
 * GET can be edited and sent back as is; the stored flag never holds one.
 */
export function withoutRevision(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !Object.hasOwn(body, 'revision')) {
    return body
  }
  const { revision: _readOnly, ...rest } = body as Record<string, unknown>
  return rest
}

/**
 * The revision a committed write left a flag at: its change in `changes`, else
 * `unchanged`, the revision it had before. A write that changes nothing records
 * no change (see `FlagWriter.changes`), so the flag keeps its revision.
 */
export function revisionIn(
  changes: readonly FlagChange[],
  scope: string,
  key: string,
  unchanged: number | null,
): number | undefined {
  for (let i = changes.length - 1; i >= 0; i--) {
    const change = changes[i] as FlagChange
    if (change.scope === scope && change.key === key) return change.revision
  }
  return unchanged ?? undefined
}

/** A flag's JSON with its read-only `revision`. */
export function flagJson(flag: object, revision: number): string {
  return withRevision(JSON.stringify(flag), revision)
}
