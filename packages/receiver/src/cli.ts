#!/usr/bin/env node
import { cliLogger, stopOnSignals } from '@flagsync/server-kit'
import { DriverMissingError } from '@flagsync/store'
import { ConfigError, loadReceiverConfig, startReceiverServer } from './receiver-server.js'

const logger = cliLogger('flagsync-receiver')

async function main(): Promise<void> {
  const config = loadReceiverConfig(process.env)
  const server = await startReceiverServer(config, { logger })
  const db = config.databaseUrl.startsWith('sqlite:') ? config.databaseUrl : 'postgres'
  logger.info(`flagsync-receiver listening on ${server.receiverUrl} (database ${db})`)

  stopOnSignals(server, logger)
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) logger.error(`invalid configuration: ${error.message}`)
  // Nothing to debug in a missing driver: the message is the fix (`npm install pg`).
  else if (error instanceof DriverMissingError) logger.error(error.message)
  else logger.error({ err: error }, 'flagsync-receiver failed to start')
  process.exit(1)
})
