import { type AuditEntryWire, auditQuerySchema } from '@flagsync/protocol'
import { parseOr422 } from '@flagsync/server-kit'
import { type AuditEntry, AuditLog, type AuditPage, auditEntryToWire, auditPageToWire } from '@flagsync/store'
import { type Response, Router } from 'express'
import { environmentOf, projectOf, requireProjectRole } from '../auth/guards.js'
import { allowOnly } from '../routes/common.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'

/** One entry of the service's audit trail: the flat API's entry plus the environment it happened in. */
export type ServiceAuditEntry = AuditEntryWire & { environment_id: string }

/** `?since=&cursor=&limit=` (422 for anything else), as the store's query; 100 entries a page unless asked. */
export function auditQueryOf(query: unknown) {
  const q = parseOr422(auditQuerySchema, query, 'query')
  return { since: q.since, cursor: q.cursor, limit: q.limit ?? 100 }
}

/** Sends a page, newest first; `nextCursor` (a string, null on the last page) asks for the next, older one. */
export function sendAuditPage(res: Response, page: AuditPage): void {
  res.setHeader('Cache-Control', 'no-store')
  res.json(auditPageToWire(page, auditEntryJson))
}

/** The store's wire form of the entry, with the environment (the entry's scope) after its time. */
export function auditEntryJson(entry: AuditEntry): ServiceAuditEntry {
  const { revision, time, ...rest } = auditEntryToWire(entry)
  return { revision, time, environment_id: entry.scope, ...rest }
}

/**
 * `GET /api/environments/:env_id/changes` (after `loadEnvironment`): every
 * change of the environment's flags, deleted flags included. Project viewers
 * read it, as they read the flags and the change requests (whose requester
 * and reviewer the trail names too).
 */
export function createEnvironmentChangesRouter(runtime: ServiceRuntime): Router {
  const router = Router({ mergeParams: true })
  const audit = new AuditLog(runtime.db)
  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    sendAuditPage(res, await audit.changes({ ...auditQueryOf(req.query), scope: environmentOf(req).id }))
  })
  allowOnly(router, '/', 'GET')
  return router
}

/**
 * `GET /api/projects/:project_id/changes` (after `loadProject`): the changes
 * of every environment the project has now, merged newest first.
 */
export function createProjectChangesRouter(runtime: ServiceRuntime): Router {
  const router = Router({ mergeParams: true })
  const audit = new AuditLog(runtime.db)
  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    const query = auditQueryOf(req.query)
    const scopes = (await runtime
      .knex(SERVICE_TABLES.environments)
      .where('project_id', projectOf(req).id)
      .pluck('id')) as string[]
    sendAuditPage(res, await audit.changes({ ...query, scopes }))
  })
  allowOnly(router, '/', 'GET')
  return router
}

/** `GET …/flags/:key/history`: one flag's entries in the environment, newest first (its deletes included). */
export async function sendFlagHistory(
  runtime: ServiceRuntime,
  res: Response,
  environmentId: string,
  key: string,
  query: unknown,
): Promise<void> {
  const audit = new AuditLog(runtime.db)
  sendAuditPage(res, await audit.history(key, { ...auditQueryOf(query), scope: environmentId }))
}
