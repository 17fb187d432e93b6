import type { Express } from 'express'
import { loadEnvironment } from '../auth/guards.js'
import type { FeatureMountContext } from '../feature-mount.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { retentionFromEnv, startImpressionRetention } from './retention.js'
import { createImpressionsRouter } from './routes.js'

export { KNOWN_KEY_TTL_MS } from './known-keys.js'
export type { ImpressionRetention } from './retention.js'
export {
  pruneExpiredImpressions,
  retentionFromEnv,
  startImpressionRetention,
} from './retention.js'

export type { ListQuery } from './schemas.js'

export type { IngestBatch } from './store.js'
export {
  listImpressions,
  pruneImpressions,
} from './store.js'
export { IMPRESSION_INDEXES, IMPRESSION_TABLES, impressionMigrations } from './tables.js'

export { ImpressionWriter } from './writer.js'

/** Runtimes whose retention job runs already (an app built twice on one runtime starts it once). */
const retained = new WeakSet<ServiceRuntime>()

/**
 * Mounts the impression routes on the service app; called by `createServiceApp` before the 404 handler.
 * Also starts the retention job for the runtime (`ServiceConfig.impressionRetention`, else the defaults).
 */
export function mountImpressionFeature(app: Express, runtime: ServiceRuntime, ctx: FeatureMountContext): void {
  const retention = ctx.impressionRetention ?? retentionFromEnv({})
  app.use(
    '/api/environments/:env_id/impressions',
    ctx.auth,
    loadEnvironment(runtime),
    createImpressionsRouter(runtime, ctx.routerOptions),
  )
  if (!retained.has(runtime)) {
    retained.add(runtime)
    startImpressionRetention(runtime, retention)
  }
}
