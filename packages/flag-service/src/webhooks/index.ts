import type { Express, RequestHandler } from 'express'
import { loadProject } from '../auth/guards.js'
import type { FeatureMountContext } from '../feature-mount.js'
import type { ServiceRuntime } from '../service-runtime.js'
import type { ServiceMigration } from '../tables.js'
import { createWebhooksRouter } from './routes.js'
import { type WebhookSettings, webhookSettingsFromEnv } from './settings.js'
import { webhookMigration } from './tables.js'
import { DeliveryWorker, type WorkerDeps } from './worker.js'

export { isRefusedAddress } from './address-policy.js'
export { WEBHOOK_TABLES } from './tables.js'

/** Webhooks and their deliveries; named 0300_… so they sort after the flag feature's. */
export const webhookMigrations: ServiceMigration[] = [webhookMigration]

const workers = new WeakMap<ServiceRuntime, DeliveryWorker>()

/**
 * The runtime's delivery worker, started on first use: woken by the runtime's
 * committed flag changes, stopped (in-flight attempts recorded) on `runtime.close()`.
 */
function webhookWorkerOf(
  runtime: ServiceRuntime,
  settings: WebhookSettings = webhookSettingsFromEnv({}),
  deps: Partial<Pick<WorkerDeps, 'transport' | 'setTimer' | 'clearTimer' | 'random'>> = {},
): DeliveryWorker {
  let worker = workers.get(runtime)
  if (!worker) {
    const created = new DeliveryWorker(
      { knex: runtime.knex, dialect: runtime.db.config.dialect, logger: runtime.logger, clock: runtime.clock, ...deps },
      settings,
    )
    worker = created
    workers.set(runtime, created)
    runtime.onFlagChanges(() => created.poke())
    runtime.onClose(() => created.stop())
    created.poke()
  }
  return worker
}

/** Mounts /api/projects/:project_id/webhooks and starts the delivery worker (`ServiceConfig.webhooks`). */
export function mountWebhookFeature(app: Express, runtime: ServiceRuntime, ctx: FeatureMountContext): void {
  const worker = webhookWorkerOf(runtime, ctx.webhooks)
  // /api/projects/… requests were authenticated by the projects mount already; do not look the caller up twice.
  const auth: RequestHandler = (req, res, next) => (req.auth ? next() : ctx.auth(req, res, next))
  app.use(
    '/api/projects/:project_id/webhooks',
    auth,
    loadProject(runtime),
    createWebhooksRouter(runtime, () => worker.poke(), ctx.routerOptions),
  )
}
