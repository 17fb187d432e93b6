#!/usr/bin/env node
import { createLogger } from '@flagsync/server-kit'
import { ConfigError, loadServiceConfig } from './config.js'
import { startFlagServiceServer } from './server.js'

const logger = createLogger({ name: 'flagsync-service' })

async function main(): Promise<void> {
  const config = loadServiceConfig(process.env)
  const server = await startFlagServiceServer(config, logger)
  const db = config.databaseUrl.startsWith('sqlite:') ? config.databaseUrl : 'postgres'
  logger.info(`flagsync service listening on ${server.url} (database ${db})`)

  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info(`${signal}: closing the server and the database`)
    const force = setTimeout(() => process.exit(1), 5000)
    force.unref()
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    )
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) logger.error(error.message)
  else logger.error({ err: error }, 'flagsync service failed to start')
  process.exit(1)
})
