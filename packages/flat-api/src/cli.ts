#!/usr/bin/env node
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type EarlyServer, listenEarly } from './listen-early.js'

// The port is bound before anything heavy is imported: Express, knex and the
// store are most of a start (about a second idle, several on a loaded
// machine), and a restarted server's stream clients would spend it refused and
// retrying on their own backoff. Bound first, they wait in line and get their
// bootstrap the moment the flags are loaded.

/** HOST and PORT as loadConfig reads them; undefined when PORT is malformed, so loadConfig rejects it by name. */
function plainAddress(env: NodeJS.ProcessEnv): { host: string; port: number } | undefined {
  const raw = env.PORT
  if (raw !== undefined && raw !== '' && !/^\d+$/.test(raw.trim())) return undefined
  const port = raw === undefined || raw === '' ? 8787 : Number(raw)
  return Number.isInteger(port) && port <= 65535 ? { host: env.HOST || '127.0.0.1', port } : undefined
}

async function main(): Promise<void> {
  const address = plainAddress(process.env)
  let bound: EarlyServer | undefined
  if (address) bound = await listenEarly(address)
  const [{ createLogger, stopOnSignals }, { loadConfig }, { startFlatApiServer }] = await Promise.all([
    import('@flagsync/server-kit'),
    import('./config.js'),
    import('./server.js'),
  ])
  const logger = createLogger({ name: 'flagsync' })
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig(process.env, { port: 8787 })
  } catch (error) {
    await bound?.close()
    throw error
  }
  if (!config.staticDir) {
    // In the repository, serve the flag console when it has been built.
    const console = fileURLToPath(new URL('../../../examples/flag-console/dist', import.meta.url))
    if (existsSync(console)) config.staticDir = console
  }
  const server = await startFlatApiServer(config, logger, { bound })
  const db = config.databaseUrl.startsWith('sqlite:') ? config.databaseUrl : 'postgres'
  logger.info(`flagsync listening on ${server.url} (database ${db})`)

  stopOnSignals(server, logger)
}

main().catch(async (error: unknown) => {
  const [{ ConfigError, createLogger }, { DriverMissingError }] = await Promise.all([
    import('@flagsync/server-kit'),
    import('@flagsync/store'),
  ])
  let logger: ReturnType<typeof createLogger>
  try {
    logger = createLogger({ name: 'flagsync' })
  } catch {
    logger = createLogger({ name: 'flagsync', level: 'error' }) // LOG_LEVEL itself is what failed
  }
  // Nothing to debug in a missing driver: the message is the fix (`npm install pg`).
  if (error instanceof ConfigError || error instanceof DriverMissingError) logger.error(error.message)
  else logger.error({ err: error }, 'flagsync failed to start')
  process.exit(1)
})
