import type { Express, RequestHandler } from 'express'
import { createEnvironmentChangesRouter, createProjectChangesRouter } from '../audit/routes.js'
import { loadEnvironment, loadProject } from '../auth/guards.js'
import { createChangeRequestsRouter } from '../change-requests/routes.js'
import { changeRequestBaseMigration, changeRequestMigration } from '../change-requests/tables.js'
import { createEvaluateRouter } from '../evaluate/routes.js'
import type { FeatureMountContext } from '../feature-mount.js'
import { createSegmentsRouter } from '../segments/routes.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { type FlagStreamOptions, FlagStreams } from '../streams/flag-streams.js'
import { createStreamRouter } from '../streams/routes.js'
import { createEnvironmentSyncRouter } from '../sync/routes.js'
import type { ServiceMigration } from '../tables.js'
import { createCompareRouter } from './compare.js'
import { createProjectFlagsRouter } from './project-routes.js'
import { createProjectPromoteRouter } from './promote-routes.js'
import { createEnvironmentFlagsRouter } from './routes.js'

export { CHANGE_REQUESTS_TABLE } from '../change-requests/tables.js'
export type { FeatureMountContext } from '../feature-mount.js'
export { sweepOrphanSegments } from '../segments/maintenance.js'
export type { FlagStreamOptions } from '../streams/flag-streams.js'
export { FlagStreams } from '../streams/flag-streams.js'

/**
 * Environment flags, segments, change requests, /stream and /flags/snapshot.
 * Migrations are named 0100_… so they sort after the core ones.
 */
export const flagMigrations: ServiceMigration[] = [changeRequestMigration, changeRequestBaseMigration]

const streamsByRuntime = new WeakMap<ServiceRuntime, FlagStreams>()

/**
 * The process's stream engine for a runtime, created on first use: it follows
 * the runtime's committed changes (`onFlagChanges`, before `write` resolves)
 * and the change log (other instances), and stops on `runtime.close()`.
 */
export function flagStreamsOf(runtime: ServiceRuntime, options: FlagStreamOptions = {}): FlagStreams {
  let streams = streamsByRuntime.get(runtime)
  if (!streams) {
    const created = new FlagStreams(runtime, options)
    streams = created
    streamsByRuntime.set(runtime, created)
    runtime.onFlagChanges((changes) => created.ingest(changes))
    runtime.onClose(() => created.close())
    created.ready().catch((err) => runtime.logger.warn({ err }, 'flag streams: initial load failed; retrying on use'))
  }
  return streams
}

/** Mounts the flag routes on the service app; called by `createServiceApp` before the 404 handler. */
export function mountFlagFeature(app: Express, runtime: ServiceRuntime, ctx: FeatureMountContext): void {
  const streams = flagStreamsOf(runtime, ctx.flags)
  // /api/projects/… requests were authenticated by the projects mount already; do not look the caller up twice.
  const auth: RequestHandler = (req, res, next) => (req.auth ? next() : ctx.auth(req, res, next))
  app.use(
    '/api/environments/:env_id/flags',
    auth,
    loadEnvironment(runtime),
    createEnvironmentFlagsRouter(runtime, { ...ctx.routerOptions, staleAfterDays: ctx.staleAfterDays }),
  )
  app.use(
    '/api/environments/:env_id/evaluate',
    auth,
    loadEnvironment(runtime),
    createEvaluateRouter(streams, ctx.routerOptions),
  )
  app.use(
    '/api/environments/:env_id/change-requests',
    auth,
    loadEnvironment(runtime),
    createChangeRequestsRouter(runtime, ctx.routerOptions),
  )
  app.use(
    '/api/environments/:env_id/sync',
    auth,
    loadEnvironment(runtime),
    createEnvironmentSyncRouter(runtime, ctx.routerOptions),
  )
  app.use('/api/environments/:env_id/changes', auth, loadEnvironment(runtime), createEnvironmentChangesRouter(runtime))
  app.use('/api/projects/:project_id/changes', auth, loadProject(runtime), createProjectChangesRouter(runtime))
  app.use(
    '/api/projects/:project_id/flags',
    auth,
    loadProject(runtime),
    createProjectFlagsRouter(runtime, ctx.routerOptions),
  )
  app.use('/api/projects/:project_id/compare', auth, loadProject(runtime), createCompareRouter(runtime))
  app.use(
    '/api/projects/:project_id/promote',
    auth,
    loadProject(runtime),
    createProjectPromoteRouter(runtime, ctx.routerOptions),
  )
  app.use(
    '/api/projects/:project_id/segments',
    auth,
    loadProject(runtime),
    createSegmentsRouter(runtime, ctx.routerOptions),
  )
  app.use(createStreamRouter(runtime, streams, auth))
}
