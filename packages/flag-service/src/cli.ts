#!/usr/bin/env node
import { cliLogger, stopOnSignals } from '@flagsync/server-kit'
import { DriverMissingError } from '@flagsync/store'
import { ConfigError, loadServiceConfig } from './config.js'
import { startFlagServiceServer } from './server.js'

const logger = cliLogger('flagsync-service')

async function main(): Promise<void> {
  const config = loadServiceConfig(process.env)
  const server = await startFlagServiceServer(config, logger)
  const db = config.databaseUrl.startsWith('sqlite:') ? config.databaseUrl : 'postgres'
  logger.info(`flagsync service listening on ${server.url} (database ${db})`)

  stopOnSignals(server, logger)
}

main().catch((error: unknown) => {
  // Nothing to debug in a missing driver: the message is the fix (`npm install pg`).
  if (error instanceof ConfigError || error instanceof DriverMissingError) logger.error(error.message)
  else logger.error({ err: error }, 'flagsync service failed to start')
  process.exit(1)
})
