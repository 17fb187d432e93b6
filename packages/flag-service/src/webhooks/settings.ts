import { ConfigError, envInt } from '@flagsync/server-kit'

// Settings only (no store imports), so the service config can read them without pulling the feature in.

export interface WebhookSettings {
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS: deliver to loopback, private and link-local addresses (default false). */
  allowPrivateTargets: boolean
  /** WEBHOOK_DISABLE_AFTER_MS: a webhook failing for this long is disabled (default 24 h). */
  disableAfterMs: number
  /** WEBHOOK_TIMEOUT_MS: one attempt's bound, connect to last byte (default 10 000). */
  timeoutMs: number
  /** WEBHOOK_POLL_MS: how often an idle worker looks for due deliveries, e.g. other instances' (default 1 000). */
  pollMs: number
  /** WEBHOOK_CONCURRENCY: deliveries one instance sends at a time (default 16). */
  concurrency: number
  /** WEBHOOK_RETRY_BASE_MS: the first retry's delay, doubled per attempt, with jitter (default 5 000). */
  retryBaseMs: number
  /** WEBHOOK_RETRY_MAX_MS: the longest delay between attempts, also for Retry-After (default 1 h). */
  retryMaxMs: number
  /** WEBHOOK_DELIVERY_RETENTION_DAYS: delivered and failed deliveries are deleted after this long (default 30 days; 0 keeps them). */
  deliveryRetentionMs: number
  /** Bytes of a target's answer kept in the delivery log. */
  maxResponseBytes: number
}

const HOUR_MS = 60 * 60 * 1000

function envBoolean(env: Record<string, string | undefined>, name: string): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase()
  if (raw === '' || raw === 'false' || raw === '0') return false
  if (raw === 'true' || raw === '1') return true
  throw new ConfigError(`${name} must be true or false (got ${JSON.stringify(env[name])})`)
}

/** The WEBHOOK_* variables; malformed values stop startup with a message naming the variable. */
export function webhookSettingsFromEnv(env: Record<string, string | undefined>): WebhookSettings {
  return {
    allowPrivateTargets: envBoolean(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS'),
    disableAfterMs: envInt(env, 'WEBHOOK_DISABLE_AFTER_MS', 24 * HOUR_MS, 1000, 30 * 24 * HOUR_MS),
    timeoutMs: envInt(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
    pollMs: envInt(env, 'WEBHOOK_POLL_MS', 1000, 10, 600_000),
    concurrency: envInt(env, 'WEBHOOK_CONCURRENCY', 16, 1, 256),
    retryBaseMs: envInt(env, 'WEBHOOK_RETRY_BASE_MS', 5000, 1, HOUR_MS),
    retryMaxMs: envInt(env, 'WEBHOOK_RETRY_MAX_MS', HOUR_MS, 1, 24 * HOUR_MS),
    deliveryRetentionMs: envInt(env, 'WEBHOOK_DELIVERY_RETENTION_DAYS', 30, 0, 36_500) * 24 * HOUR_MS,
    maxResponseBytes: 4096,
  }
}
