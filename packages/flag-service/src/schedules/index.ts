import type { Express, RequestHandler } from 'express'
import { loadEnvironment } from '../auth/guards.js'
import type { FeatureMountContext } from '../feature-mount.js'
import type { ServiceRuntime } from '../service-runtime.js'
import type { ServiceMigration } from '../tables.js'
import { createEnvironmentSchedulesRouter, createFlagSchedulesRouter } from './routes.js'
import { ScheduleRunner, type ScheduleRunnerOptions } from './runner.js'
import { scheduleMigration } from './tables.js'

export { SCHEDULES_TABLE } from './tables.js'

/** Scheduled flag changes; migrations named 0200_… sort after the flags feature's. */
export const scheduleMigrations: ServiceMigration[] = [scheduleMigration]

const runners = new WeakMap<ServiceRuntime, ScheduleRunner>()

/**
 * The process's schedule runner for a runtime, started on first use (an app built twice on one runtime runs one)
 * and stopped on `runtime.close()`.
 */
function scheduleRunnerOf(runtime: ServiceRuntime, options: ScheduleRunnerOptions = {}): ScheduleRunner {
  let runner = runners.get(runtime)
  if (!runner) {
    const created = new ScheduleRunner(runtime, options)
    runner = created
    runners.set(runtime, created)
    runtime.onClose(() => created.close())
    created.nudge()
  }
  return runner
}

/**
 * Mounts the schedule routes; called by `createServiceApp` before the flag routes, so a schedule path is not first
 * authenticated and looked up by the flags router's mount.
 */
export function mountScheduleFeature(app: Express, runtime: ServiceRuntime, ctx: FeatureMountContext): void {
  const runner = scheduleRunnerOf(runtime, { pollMs: ctx.schedulePollMs })
  const nudge = () => runner.nudge()
  const auth: RequestHandler = (req, res, next) => (req.auth ? next() : ctx.auth(req, res, next))
  app.use(
    '/api/environments/:env_id/flags/:key/schedules',
    auth,
    loadEnvironment(runtime),
    createFlagSchedulesRouter(runtime, nudge, ctx.routerOptions),
  )
  app.use(
    '/api/environments/:env_id/schedules',
    auth,
    loadEnvironment(runtime),
    createEnvironmentSchedulesRouter(runtime, nudge),
  )
}
