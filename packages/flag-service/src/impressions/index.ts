import type { Express } from 'express'
import type { FeatureMountContext } from '../flags/index.js'
import type { ServiceMigration } from '../migrations.js'
import type { ServiceRuntime } from '../service-runtime.js'

/** Impressions (issue 11). Migrations are named 0200_… so they sort after the flag feature's. */
export const impressionMigrations: ServiceMigration[] = []

/** Mounts the impression routes on the service app; called by `createServiceApp` before the 404 handler. */
export function mountImpressionFeature(_app: Express, _runtime: ServiceRuntime, _ctx: FeatureMountContext): void {}
