import { ConfigError, envByteSize, envInt } from '@flagsync/server-kit'
import { DEFAULT_DATABASE_URL } from '@flagsync/store'

export interface ServerConfig {
  host: string
  port: number
  databaseUrl: string
  sdkKey: string | undefined
  /**
   * A key that may be shown in a web page (CLIENT_KEY, needs SDK_KEY): it reads flags (`GET /api/flags`,
   * `GET /api/flags/:key`, `/stream`, `/ofrep/v1/…`) and is refused (403) everywhere else.
   */
  clientKey?: string | undefined
  receiverToken: string | undefined
  keepAliveMs: number
  pollIntervalMs: number
  /** Bytes a slow /stream subscriber may have queued behind its bootstrap before it is dropped (STREAM_MAX_BUFFER_BYTES, default 1 MiB). */
  maxStreamBufferBytes?: number
  /** Open /stream connections at most; past it 503 with Retry-After (STREAM_MAX_CONNECTIONS, default 10 000). */
  maxStreamConnections?: number
  /** Base of the `retry:` every stream starts with, ms (STREAM_RETRY_MS, default 1 000, plus up to as much jitter). */
  streamRetryMs?: number
  /**
   * Idle keep-alive timeout of HTTP connections, ms (KEEP_ALIVE_TIMEOUT_MS, default 65 000): keep it above the
   * load balancer's idle timeout, or the balancer reuses sockets the server has already closed (502s).
   */
  keepAliveTimeoutMs?: number
  corsOrigins: string[]
  bodyLimit: string
  batchRetentionMs: number
  /** How long the audit trail keeps entries (AUDIT_RETENTION_DAYS, default 90); each flag's latest state stays. */
  auditRetentionMs?: number
  staticDir: string | undefined
}

export { ConfigError } from '@flagsync/server-kit'

/** Reads the server's settings from environment variables, rejecting malformed ones by name. */
export function loadConfig(env: Record<string, string | undefined>, defaults: { port: number }): ServerConfig {
  const sdkKey = env.SDK_KEY || undefined
  const clientKey = env.CLIENT_KEY || undefined
  if (clientKey !== undefined && sdkKey === undefined) {
    throw new ConfigError('CLIENT_KEY needs SDK_KEY: without SDK_KEY authentication is off and every key is ignored')
  }
  if (clientKey !== undefined && clientKey === sdkKey) {
    throw new ConfigError('CLIENT_KEY must differ from SDK_KEY: the client key is shown in pages, the SDK key is not')
  }
  return {
    host: env.HOST || '127.0.0.1',
    port: envInt(env, 'PORT', defaults.port, 0, 65535),
    databaseUrl: env.DATABASE_URL || DEFAULT_DATABASE_URL,
    sdkKey,
    clientKey,
    receiverToken: env.RECEIVER_TOKEN || undefined,
    keepAliveMs: envInt(env, 'STREAM_KEEPALIVE_MS', 15_000, 1, 3_600_000),
    pollIntervalMs: envInt(env, 'POLL_INTERVAL_MS', 1000, 10, 600_000),
    maxStreamBufferBytes: envInt(env, 'STREAM_MAX_BUFFER_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxStreamConnections: envInt(env, 'STREAM_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    streamRetryMs: envInt(env, 'STREAM_RETRY_MS', 1000, 0, 3_600_000),
    keepAliveTimeoutMs: envInt(env, 'KEEP_ALIVE_TIMEOUT_MS', 65_000, 1_000, 3_600_000),
    corsOrigins: (env.CORS_ORIGINS ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    bodyLimit: envByteSize(env, 'BODY_LIMIT', '1mb'),
    batchRetentionMs: envInt(env, 'BATCH_RETENTION_DAYS', 30, 1, 3650) * 24 * 60 * 60 * 1000,
    auditRetentionMs: envInt(env, 'AUDIT_RETENTION_DAYS', 90, 1, 36500) * 24 * 60 * 60 * 1000,
    staticDir: env.CONSOLE_DIR || undefined,
  }
}
