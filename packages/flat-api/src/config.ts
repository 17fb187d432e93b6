import { DEFAULT_DATABASE_URL } from '@flagsync/store'

export interface ServerConfig {
  host: string
  port: number
  databaseUrl: string
  sdkKey: string | undefined
  receiverToken: string | undefined
  keepAliveMs: number
  pollIntervalMs: number
  corsOrigins: string[]
  bodyLimit: string
  batchRetentionMs: number
  staticDir: string | undefined
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError'
}

/** Reads the server's settings from environment variables, rejecting malformed ones by name. */
export function loadConfig(env: Record<string, string | undefined>, defaults: { port: number }): ServerConfig {
  return {
    host: env.HOST || '127.0.0.1',
    port: int(env, 'PORT', defaults.port, 0, 65535),
    databaseUrl: env.DATABASE_URL || DEFAULT_DATABASE_URL,
    sdkKey: env.SDK_KEY || undefined,
    receiverToken: env.RECEIVER_TOKEN || undefined,
    keepAliveMs: int(env, 'STREAM_KEEPALIVE_MS', 15_000, 1, 3_600_000),
    pollIntervalMs: int(env, 'POLL_INTERVAL_MS', 1000, 10, 600_000),
    corsOrigins: (env.CORS_ORIGINS ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    bodyLimit: env.BODY_LIMIT || '1mb',
    batchRetentionMs: int(env, 'BATCH_RETENTION_DAYS', 30, 1, 3650) * 24 * 60 * 60 * 1000,
    staticDir: env.CONSOLE_DIR || undefined,
  }
}

function int(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number) {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(raw)})`)
  }
  return value
}
