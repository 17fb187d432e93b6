import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, envByteSize, envInt, parseOrigins } from '@flagsync/server-kit'
import { parseDatabaseUrl } from '@flagsync/store'
import { z } from 'zod'
import { type ImpressionRetention, retentionFromEnv } from './impressions/retention-config.js'
import { type WebhookSettings, webhookSettingsFromEnv } from './webhooks/settings.js'

/** The service keeps its own file by default, so it never shares a workspace with the flat API's `npm start`. */
export const DEFAULT_SERVICE_DATABASE_URL = 'sqlite:./data/flag-service.sqlite'
const DEFAULT_SERVICE_PORT = 8788

/** The first workspace and its admin, created on an empty database only. */
export interface SetupConfig {
  adminEmail: string
  adminPassword: string
  workspaceName: string
  /** ADMIN_NAME, default the part of the email before the @. */
  adminName: string
}

export interface ServiceConfig {
  host: string
  port: number
  databaseUrl: string
  /** ADMIN_EMAIL, ADMIN_PASSWORD and WORKSPACE_NAME; undefined when none is set. */
  setup: SetupConfig | undefined
  /** Origins allowed to call the API from browsers with a Bearer credential (CORS_ORIGINS). */
  corsOrigins: string[]
  /** Largest JSON body (BODY_LIMIT, default '1mb'). */
  bodyLimit: string
  /** Idle keep-alive timeout of HTTP connections, ms (KEEP_ALIVE_TIMEOUT_MS, default 65 000). */
  keepAliveTimeoutMs: number
  /** `Secure` on the session cookie: always, never, or when the request came over HTTPS (COOKIE_SECURE, default auto). */
  cookieSecure: boolean | 'auto'
  /**
   * /stream settings: STREAM_KEEPALIVE_MS (15 000), POLL_INTERVAL_MS (1 000), STREAM_MAX_BUFFER_BYTES (1 MiB),
   * STREAM_MAX_CONNECTIONS (10 000), STREAM_RETRY_MS (1 000).
   */
  stream: {
    keepAliveMs: number
    pollIntervalMs: number
    maxStreamBufferBytes: number
    maxStreamConnections: number
    streamRetryMs: number
  }
  /** Impression retention: IMPRESSION_RETENTION_DAYS (30; 0 keeps them forever), IMPRESSION_PRUNE_INTERVAL_MINUTES (60). */
  impressionRetention: ImpressionRetention
  /** SCHEDULE_POLL_MS (1 000, 10–600 000): how often the schedule runner looks for other instances' schedules. */
  schedulePollMs: number
  /** DASHBOARD_DIR: the dashboard build served at `/`; unset: the installed `@flagsync/dashboard`'s; `off`: none. */
  dashboardDir: string | undefined
  /** STALE_AFTER_DAYS (30, 1–3 650): a flag serving one value, or not evaluated, for this long reads as stale. */
  staleAfterDays: number
  /** Outbound webhooks: WEBHOOK_ALLOW_PRIVATE_TARGETS, WEBHOOK_DISABLE_AFTER_MS, WEBHOOK_TIMEOUT_MS, … (see README). */
  webhooks: WebhookSettings
}

export { ConfigError } from '@flagsync/server-kit'

export const SETUP_VARIABLES = ['ADMIN_EMAIL', 'ADMIN_PASSWORD', 'WORKSPACE_NAME'] as const

const emailSchema = z.email().max(254)

/** Reads the service's settings from environment variables, rejecting malformed ones by name. */
export function loadServiceConfig(env: Record<string, string | undefined>): ServiceConfig {
  const databaseUrl = env.DATABASE_URL || DEFAULT_SERVICE_DATABASE_URL
  try {
    parseDatabaseUrl(databaseUrl)
  } catch (error) {
    throw new ConfigError((error as Error).message)
  }
  return {
    host: env.HOST || '127.0.0.1',
    port: envInt(env, 'PORT', DEFAULT_SERVICE_PORT, 0, 65535),
    databaseUrl,
    setup: setupFrom(env),
    corsOrigins: parseOrigins(env.CORS_ORIGINS),
    bodyLimit: bodyLimit(env),
    keepAliveTimeoutMs: envInt(env, 'KEEP_ALIVE_TIMEOUT_MS', 65_000, 1_000, 3_600_000),
    stream: {
      keepAliveMs: envInt(env, 'STREAM_KEEPALIVE_MS', 15_000, 1, 3_600_000),
      pollIntervalMs: envInt(env, 'POLL_INTERVAL_MS', 1000, 10, 600_000),
      maxStreamBufferBytes: envInt(env, 'STREAM_MAX_BUFFER_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
      maxStreamConnections: envInt(env, 'STREAM_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
      streamRetryMs: envInt(env, 'STREAM_RETRY_MS', 1000, 0, 3_600_000),
    },
    cookieSecure: cookieSecure(env),
    impressionRetention: retentionFromEnv(env),
    schedulePollMs: envInt(env, 'SCHEDULE_POLL_MS', 1000, 10, 600_000),
    dashboardDir: dashboardDir(env),
    staleAfterDays: envInt(env, 'STALE_AFTER_DAYS', 30, 1, 3650),
    webhooks: webhookSettingsFromEnv(env),
  }
}

/**
 * DASHBOARD_DIR as set (unset and `off` are resolved at start). A directory
 * without index.html is refused now: accepted, it only showed later as a 404
 * at `/`, which reads as a routing fault rather than a wrong path.
 */
function dashboardDir(env: Record<string, string | undefined>): string | undefined {
  const raw = env.DASHBOARD_DIR?.trim() || undefined
  if (raw === undefined || raw === 'off') return raw
  if (!existsSync(join(raw, 'index.html'))) {
    throw new ConfigError(
      `DASHBOARD_DIR must be a built dashboard, a directory with an index.html, or off (${JSON.stringify(raw)} has no index.html)`,
    )
  }
  return raw
}

function setupFrom(env: Record<string, string | undefined>): SetupConfig | undefined {
  const set = SETUP_VARIABLES.filter((name) => env[name])
  if (set.length === 0) return undefined
  const missing = SETUP_VARIABLES.filter((name) => !env[name])
  if (missing.length > 0) {
    throw new ConfigError(
      `${set.join(', ')} set but ${missing.join(', ')} missing: set all three to create the workspace`,
    )
  }
  const adminEmail = (env.ADMIN_EMAIL ?? '').trim().toLowerCase()
  const adminPassword = env.ADMIN_PASSWORD ?? ''
  const workspaceName = (env.WORKSPACE_NAME ?? '').trim()
  if (!emailSchema.safeParse(adminEmail).success) {
    throw new ConfigError(`ADMIN_EMAIL must be an email address (got ${JSON.stringify(env.ADMIN_EMAIL)})`)
  }
  if (adminPassword.length < 8) throw new ConfigError('ADMIN_PASSWORD must be at least 8 characters')
  if (adminPassword.length > 1024) throw new ConfigError('ADMIN_PASSWORD must be at most 1024 characters')
  if (workspaceName.length === 0 || workspaceName.length > 100) {
    throw new ConfigError('WORKSPACE_NAME must be 1 to 100 characters')
  }
  const adminName = (env.ADMIN_NAME || adminEmail.split('@')[0] || adminEmail).trim().slice(0, 100)
  return { adminEmail, adminPassword, workspaceName, adminName }
}

function bodyLimit(env: Record<string, string | undefined>): string {
  // The same check as the flat API's: a size from 1kb to 1gb (0 would refuse every body with a 413).
  return envByteSize(env, 'BODY_LIMIT', '1mb')
}

function cookieSecure(env: Record<string, string | undefined>): boolean | 'auto' {
  const raw = (env.COOKIE_SECURE || 'auto').toLowerCase()
  if (raw === 'auto') return 'auto'
  if (raw === 'true' || raw === '1') return true
  if (raw === 'false' || raw === '0') return false
  throw new ConfigError(`COOKIE_SECURE must be auto, true or false (got ${JSON.stringify(env.COOKIE_SECURE)})`)
}
