import {
  apiSecurityHeaders,
  ConfigError,
  createLogger,
  envInt,
  errorHandler,
  type Logger,
  listen,
  notFound,
  parseOrigins,
  type RunningServer,
} from '@flagsync/server-kit'
import { DEFAULT_DATABASE_URL, FlagStore, openDatabase, parseDatabaseUrl } from '@flagsync/store'
import express, { type Express } from 'express'
import { createReceiver, DEFAULT_PRUNE_INTERVAL_MS, type Receiver, type ReceiverOptions } from './receiver.js'

/** Settings of the standalone receiver; `loadReceiverConfig` reads them from the environment. */
export interface ReceiverServerConfig {
  host: string
  port: number
  databaseUrl: string
  /** Bearer token senders must present (RECEIVER_TOKEN, else SDK_KEY); unset: no auth. */
  token: string | undefined
  corsOrigins: string[]
  batchRetentionMs: number
  /** Where the receiver is mounted (default '/sync'). */
  path: string
  /** Interval of the pruning timer, ms (default 1 hour; 0: no timer). */
  pruneIntervalMs?: number
}

export { ConfigError } from '@flagsync/server-kit'

const DAY_MS = 24 * 60 * 60 * 1000

/** Reads the standalone receiver's settings, rejecting malformed ones by name. */
export function loadReceiverConfig(env: Record<string, string | undefined>): ReceiverServerConfig {
  const databaseUrl = env.DATABASE_URL || DEFAULT_DATABASE_URL
  try {
    parseDatabaseUrl(databaseUrl)
  } catch (error) {
    throw new ConfigError(error instanceof Error ? error.message : String(error))
  }
  const corsOrigins = parseOrigins(env.CORS_ORIGINS)
  for (const origin of corsOrigins) {
    if (origin !== '*' && !isOrigin(origin)) {
      throw new ConfigError(
        `CORS_ORIGINS must be a comma-separated list of origins like https://app.example.com, or * (got ${JSON.stringify(origin)})`,
      )
    }
  }
  const path = env.RECEIVER_PATH || '/sync'
  if (!/^\/[A-Za-z0-9._~/-]*$/.test(path)) {
    throw new ConfigError(`RECEIVER_PATH must be a URL path starting with / (got ${JSON.stringify(path)})`)
  }
  return {
    host: env.HOST || '127.0.0.1',
    port: envInt(env, 'PORT', 8789, 0, 65535),
    databaseUrl,
    token: env.RECEIVER_TOKEN || env.SDK_KEY || undefined,
    corsOrigins,
    batchRetentionMs: envInt(env, 'BATCH_RETENTION_DAYS', 30, 1, 3650) * DAY_MS,
    path,
  }
}

function isOrigin(value: string): boolean {
  try {
    const url = new URL(value)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value
  } catch {
    return false
  }
}

export interface ReceiverAppOptions extends ReceiverOptions {
  /** Mount path of the receiver (default '/sync'). */
  path?: string
}

/** An Express app with the receiver at `path`, `GET /health`, security headers and JSON 404s. */
export function createReceiverApp(options: ReceiverAppOptions): { app: Express; receiver: Receiver } {
  const { path = '/sync', ...receiverOptions } = options
  const app = express()
  app.disable('x-powered-by')
  // A JSON API only: the compact set (no page is ever served here).
  app.use(apiSecurityHeaders())
  app.get('/health', (_req, res) => {
    res.type('text/plain').send('OK')
  })
  const receiver = createReceiver(receiverOptions)
  app.use(path, receiver)
  app.use(notFound)
  app.use(errorHandler(options.logger))
  return { app, receiver }
}

export interface ReceiverServer extends RunningServer {
  store: FlagStore
  receiver: Receiver
  /** The receiver's absolute URL, e.g. http://127.0.0.1:8789/sync. */
  receiverUrl: string
}

/** Extra receiver options for embedding and tests (custom collections, limits, a clock). */
export type ReceiverServerExtras = Partial<
  Omit<ReceiverOptions, 'store' | 'token' | 'corsOrigins' | 'batchRetentionMs'>
>

/** Opens the database, mounts the receiver and listens; `close` stops the server, the timer and the database. */
export async function startReceiverServer(
  config: ReceiverServerConfig,
  extras: ReceiverServerExtras = {},
): Promise<ReceiverServer> {
  const logger: Logger = extras.logger ?? createLogger({ name: 'flagsync-receiver' })
  if (!config.token) {
    logger.warn(
      'Neither RECEIVER_TOKEN nor SDK_KEY is set: authentication is OFF and anyone who can reach this receiver can change flags. Development use only.',
    )
  }
  const db = await openDatabase(config.databaseUrl)
  const store = new FlagStore(db)
  let running: RunningServer
  let receiver: Receiver
  try {
    const built = createReceiverApp({
      ...extras,
      logger,
      store,
      token: config.token,
      corsOrigins: config.corsOrigins,
      batchRetentionMs: config.batchRetentionMs,
      path: config.path,
    })
    receiver = built.receiver
    running = await listen(built.app, { host: config.host, port: config.port })
  } catch (error) {
    await db.close()
    throw error
  }

  const pruneIntervalMs = config.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS
  const prune = () => {
    receiver.pruneBatches().then(
      (dropped) => {
        if (dropped > 0) logger.info(`forgot ${dropped} batch ids older than the retention`)
      },
      (error: unknown) => logger.warn({ err: error }, 'pruning batch ids failed; trying again later'),
    )
  }
  const timer = pruneIntervalMs > 0 ? setInterval(prune, pruneIntervalMs) : undefined
  timer?.unref()

  let closing: Promise<void> | undefined
  return {
    ...running,
    store,
    receiver,
    receiverUrl: `${running.url}${config.path}`,
    close() {
      closing ??= (async () => {
        if (timer) clearInterval(timer)
        await running.close()
        await db.close()
      })()
      return closing
    },
  }
}
