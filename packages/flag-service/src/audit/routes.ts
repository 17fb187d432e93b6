import type { ServiceAuditEntryWire } from '@flagsync/protocol'
import { auditQueryOf, HttpError } from '@flagsync/server-kit'
import {
  type AuditEntry,
  type AuditFilter,
  AuditLog,
  type AuditPage,
  type AuditQuery,
  auditEntryToWire,
  auditPageToWire,
} from '@flagsync/store'
import { type Response, Router } from 'express'
import type { Knex } from 'knex'
import { environmentOf, projectOf, requireProjectRole } from '../auth/guards.js'
import { requestersOf } from '../change-requests/rows.js'
import { environmentIds } from '../environments/queries.js'
import { isSegmentScope, segmentScope } from '../flags/expand.js'
import { isMetaScope, metaScope } from '../flags/meta.js'
import { allowOnly } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { type ChangesQuery, changesQueryOf } from './changes-query.js'
import { personOf, personWhere } from './person-filter.js'
import { flagHistoryWithSegments } from './segment-history.js'

/** One entry of the service's audit trail (`serviceAuditEntrySchema`). */
type ServiceAuditEntry = ServiceAuditEntryWire

/**
 * Sends a page, newest first; `nextCursor` (a string, null on the last page) asks for the next, older one.
 * Entries applied by a change request name its requester beside the approver (`source.requestedBy`).
 */
async function sendAuditPage(knex: Knex, res: Response, page: AuditPage): Promise<void> {
  const wire = auditPageToWire(page, auditEntryJson)
  await addRequesters(knex, wire.entries)
  res.setHeader('Cache-Control', 'no-store')
  res.json(wire)
}

/**
 * The store's wire form of the entry, with its collection and the environment
 * (the entry's scope) after its time. Segments belong to the project: their
 * entries have no environment.
 */
function auditEntryJson(entry: AuditEntry): ServiceAuditEntry {
  const { revision, time, ...rest } = auditEntryToWire(entry)
  const segment = isSegmentScope(entry.scope)
  return {
    revision,
    time,
    collection: segment ? 'segments' : 'flags',
    // A flag's tags, owner and archive belong to the project (`meta:<project>`): no environment either.
    environment_id: segment || isMetaScope(entry.scope) ? null : entry.scope,
    ...rest,
  }
}

/** Sets `source.requestedBy` on entries a change request applied, from the request's `requested_by`. */
async function addRequesters(knex: Knex, entries: ServiceAuditEntry[]): Promise<void> {
  const ids = new Set<number>()
  for (const e of entries) if (e.source?.type === 'change_request') ids.add(e.source.id)
  if (ids.size === 0) return
  const rows = await requestersOf(knex, [...ids])
  const byId = new Map(rows.map((r) => [Number(r.id), r]))
  for (const e of entries) {
    if (e.source?.type !== 'change_request') continue
    const request = byId.get(e.source.id)
    if (request && request.environment_id === e.environment_id) {
      e.source = { ...e.source, requestedBy: { name: request.requested_by, verified: true } }
    }
  }
}

/**
 * `GET /api/environments/:env_id/changes` (after `loadEnvironment`): every
 * change of the environment's flags, deleted flags included, and of the
 * project's segments, which every environment's flags may use. Project
 * viewers read it, as they read the flags and the change requests (whose
 * requester and reviewer the trail names too).
 */
export function createEnvironmentChangesRouter(runtime: ServiceRuntime): Router {
  const router = Router({ mergeParams: true })
  const audit = new AuditLog(runtime.db)
  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    const query = changesQueryOf(req.query, 'environment')
    const env = environmentOf(req)
    // Segments belong to the project, no flag: a filter by flag leaves them out. A flag's metadata is the flag's.
    const flagScopes = [env.id, metaScope(env.projectId)]
    const scopes = query.flags ? flagScopes : [...flagScopes, segmentScope(env.projectId)]
    await sendAuditPage(runtime.knex, res, await audit.changes(await filterOf(runtime.knex, query, scopes)))
  })
  allowOnly(router, '/', 'GET')
  return router
}

/**
 * `GET /api/projects/:project_id/changes` (after `loadProject`): the changes
 * of every environment the project has now and of its segments, merged newest
 * first; `?environment_id=` keeps those environments' (a 422 names an id that
 * is not one of the project's).
 */
export function createProjectChangesRouter(runtime: ServiceRuntime): Router {
  const router = Router({ mergeParams: true })
  const audit = new AuditLog(runtime.db)
  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    const query = changesQueryOf(req.query, 'project')
    const projectId = projectOf(req).id
    const environments = await environmentIds(runtime.knex, projectId)
    const picked = query.environmentIds
    const unknown = picked?.find((id) => !environments.includes(id))
    if (unknown !== undefined) {
      const message = `no environment ${JSON.stringify(unknown)} in this project`
      throw new HttpError('validation_failed', `invalid query: environment_id: ${message}`, {
        issues: [{ path: 'environment_id', message }],
      })
    }
    const segments = picked || query.flags ? [] : [segmentScope(projectId)]
    const meta = picked ? [] : [metaScope(projectId)]
    const scopes = [...(picked ?? environments), ...meta, ...segments]
    await sendAuditPage(runtime.knex, res, await audit.changes(await filterOf(runtime.knex, query, scopes)))
  })
  allowOnly(router, '/', 'GET')
  return router
}

/** The store's query for a change route's filters over `scopes`; the person filter reads the service's tables. */
async function filterOf(knex: Knex, query: ChangesQuery, scopes: string[]): Promise<AuditQuery & AuditFilter> {
  const { since, cursor, limit, flags, from, to, actor } = query
  const where = actor === undefined ? undefined : personWhere(knex, await personOf(knex, actor))
  return { scopes, since, cursor, limit, keys: flags, from, to, where }
}

/**
 * `GET …/flags/:key/history`: one flag's entries in the environment, newest
 * first (its deletes included), with the changes of the segments its rules
 * referenced when they changed (see `flagHistoryWithSegments`) and of its
 * project-level tags, owner and archive (`environment_id` null).
 */
export async function sendFlagHistory(
  runtime: ServiceRuntime,
  res: Response,
  environment: { id: string; projectId: string },
  key: string,
  query: unknown,
): Promise<void> {
  const audit = new AuditLog(runtime.db)
  const page = auditQueryOf(query)
  const own = await flagHistoryWithSegments(audit, environment, key, page)
  const meta = await audit.history(key, { ...page, scope: metaScope(environment.projectId) })
  await sendAuditPage(runtime.knex, res, mergedPage(own, meta, page.limit))
}

/** Two pages of one span merged newest first: cut at `limit`, with a cursor while either has more. */
function mergedPage(a: AuditPage, b: AuditPage, limit: number): AuditPage {
  const merged = [...a.entries, ...b.entries].sort((x, y) => y.revision - x.revision)
  const entries = merged.slice(0, limit)
  const more = merged.length > limit || a.nextCursor !== null || b.nextCursor !== null
  const oldest = entries[entries.length - 1]
  return { entries, nextCursor: more && oldest ? oldest.revision : null }
}
