#!/usr/bin/env node
import { createLogger } from '@flagsync/server-kit'
import { ConfigError, loadReceiverConfig, startReceiverServer } from './receiver-server.js'

const logger = createLogger({ name: 'flagsync-receiver' })

async function main(): Promise<void> {
  const config = loadReceiverConfig(process.env)
  const server = await startReceiverServer(config, { logger })
  const db = config.databaseUrl.startsWith('sqlite:') ? config.databaseUrl : 'postgres'
  logger.info(`flagsync-receiver listening on ${server.receiverUrl} (database ${db})`)

  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info(`${signal}: closing the server and the database`)
    setTimeout(() => process.exit(1), 5000).unref()
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    )
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) logger.error(`invalid configuration: ${error.message}`)
  else logger.error({ err: error }, 'flagsync-receiver failed to start')
  process.exit(1)
})
