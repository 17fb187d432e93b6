import type { Express, RequestHandler } from 'express'
import { loadEnvironment, loadProject } from '../auth/guards.js'
import type { FeatureMountContext } from '../feature-mount.js'
import type { ServiceRuntime } from '../service-runtime.js'
import type { ServiceMigration } from '../tables.js'
import { createEnvironmentChangesRouter, createProjectChangesRouter } from './audit-router.js'
import { changeRequestBaseMigration, changeRequestMigration, createChangeRequestsRouter } from './change-requests.js'
import { type FlagStreamOptions, FlagStreams } from './flag-streams.js'
import { createEnvironmentFlagsRouter } from './flags-router.js'
import { createProjectFlagsRouter } from './project-flags-router.js'
import { createSegmentsRouter } from './segments-router.js'
import { createStreamRouter } from './stream-router.js'
import { createEnvironmentSyncRouter } from './sync-route.js'

export type { FeatureMountContext } from '../feature-mount.js'
export { CHANGE_REQUESTS_TABLE } from './change-requests.js'

export type { FlagStreamOptions } from './flag-streams.js'
export { FlagStreams } from './flag-streams.js'
export { sweepOrphanSegments } from './maintenance.js'

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
    createEnvironmentFlagsRouter(runtime, ctx.routerOptions),
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
  app.use(
    '/api/projects/:project_id/segments',
    auth,
    loadProject(runtime),
    createSegmentsRouter(runtime, ctx.routerOptions),
  )
  app.use(createStreamRouter(runtime, streams, auth))
}
