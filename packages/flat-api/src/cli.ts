#!/usr/bin/env node
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createLogger, stopOnSignals } from '@flagsync/server-kit'
import { DriverMissingError } from '@flagsync/store'
import { ConfigError, loadConfig } from './config.js'
import { startFlatApiServer } from './server.js'

const logger = createLogger({ name: 'flagsync' })

async function main(): Promise<void> {
  const config = loadConfig(process.env, { port: 8787 })
  if (!config.staticDir) {
    // In the repository, serve the flag console when it has been built.
    const console = fileURLToPath(new URL('../../../examples/flag-console/dist', import.meta.url))
    if (existsSync(console)) config.staticDir = console
  }
  const server = await startFlatApiServer(config, logger)
  const db = config.databaseUrl.startsWith('sqlite:') ? config.databaseUrl : 'postgres'
  logger.info(`flagsync listening on ${server.url} (database ${db})`)

  stopOnSignals(server, logger)
}

main().catch((error: unknown) => {
  // Nothing to debug in a missing driver: the message is the fix (`npm install pg`).
  if (error instanceof ConfigError || error instanceof DriverMissingError) logger.error(error.message)
  else logger.error({ err: error }, 'flagsync failed to start')
  process.exit(1)
})
