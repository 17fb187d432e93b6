import type { Express, RequestHandler } from 'express'
import type { ServiceMigration } from '../migrations.js'
import type { ServiceRuntime } from '../service-runtime.js'

/**
 * Environment flags, segments, change requests, /stream and /flags/snapshot
 * (issue 10). Migrations are named 0100_… so they sort after the core ones.
 */
export const flagMigrations: ServiceMigration[] = []

export interface FeatureMountContext {
  /** `authenticate(runtime)`: sets `req.auth`, enforces CSRF and read_only. */
  auth: RequestHandler
  routerOptions: { bodyLimit?: number | string }
}

/** Mounts the flag routes on the service app; called by `createServiceApp` before the 404 handler. */
export function mountFlagFeature(_app: Express, _runtime: ServiceRuntime, _ctx: FeatureMountContext): void {}
