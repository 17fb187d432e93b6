import {
  type FlatApiServer,
  type FlatApiServerExtras,
  loadConfig,
  type ServerConfig,
  startFlatApiServer,
} from '@flagsync/flat-api'
import { type Logger, silentLogger } from '@flagsync/server-kit'
import { createTestDatabase, type Dialect, type TestDatabase } from './databases.js'

export interface TestServer extends FlatApiServer {
  databaseUrl: string
  config: ServerConfig
  /** fetch against the server with JSON helpers and the SDK key when one is set. */
  request(path: string, init?: { method?: string; body?: unknown; headers?: Record<string, string> }): Promise<Response>
  /** Stops the server; the database file stays until `dispose`. */
  stop(): Promise<void>
  dispose(): Promise<void>
}

/**
 * Starts the real flat-API server (receiver mounted) on 127.0.0.1:0 with a
 * fresh database of the given dialect (default a real SQLite file), or on an
 * existing DATABASE_URL (to restart on the same data).
 */
export async function startTestServer(
  overrides: Partial<ServerConfig> & {
    env?: Record<string, string>
    dialect?: Dialect
    /** Runtime hooks (fault injection, stream buffer size). */
    extras?: FlatApiServerExtras
    logger?: Logger
  } = {},
): Promise<TestServer> {
  const { env = {}, dialect = 'sqlite', extras, logger, ...rest } = overrides
  const db: TestDatabase | undefined = overrides.databaseUrl ? undefined : await createTestDatabase(dialect)
  const config: ServerConfig = {
    ...loadConfig(env, { port: 0 }),
    pollIntervalMs: 100,
    ...rest,
    databaseUrl: overrides.databaseUrl ?? (db as TestDatabase).url,
  }
  const server = await startFlatApiServer(config, logger ?? silentLogger(), extras)
  let stopped: Promise<void> | undefined
  const stop = () => {
    stopped ??= server.close()
    return stopped
  }
  return {
    ...server,
    config,
    databaseUrl: config.databaseUrl,
    request(path, init = {}) {
      const headers: Record<string, string> = { ...(init.headers ?? {}) }
      if (config.sdkKey && headers.Authorization === undefined) headers.Authorization = `Bearer ${config.sdkKey}`
      let body: string | undefined
      if (init.body !== undefined) {
        body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body)
        headers['Content-Type'] ??= 'application/json'
      }
      return fetch(`${server.url}${path}`, { method: init.method ?? 'GET', headers, body })
    },
    stop,
    async dispose() {
      await stop()
      await db?.drop()
    },
  }
}
