import type { RequestHandler } from 'express'
import type { ImpressionRetention } from './impressions/retention-config.js'
import type { FlagStreamOptions } from './streams/options.js'
import type { WebhookSettings } from './webhooks/settings.js'

/** What `createServiceApp` hands each feature's mount function (a leaf, so features need not import each other). */
export interface FeatureMountContext {
  /** `authenticate(runtime)`: sets `req.auth`, enforces CSRF and read_only. */
  auth: RequestHandler
  routerOptions: { bodyLimit?: number | string }
  /** Stream settings (keep-alive, poll interval, buffer limit); defaults when absent. */
  flags?: FlagStreamOptions
  /** Webhook delivery settings; the documented defaults when absent. */
  webhooks?: WebhookSettings
  /** Impression retention; the documented defaults when absent. */
  impressionRetention?: ImpressionRetention
  /** The schedule runner's poll for other instances' schedules, ms (default 1 000). */
  schedulePollMs?: number
  /** STALE_AFTER_DAYS: after how many days a flag serving one value, or not evaluated, reads as stale (default 30). */
  staleAfterDays?: number
}
