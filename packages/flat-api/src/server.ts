import { createLogger, type Logger, listen, type RunningServer } from '@flagsync/server-kit'
import { createFlatApiApp } from './app.js'
import type { ServerConfig } from './config.js'
import { withFastPath } from './fast-path.js'
import { type FlagRuntime, type FlagRuntimeOptions, openFlagRuntime } from './flag-runtime.js'

export interface FlatApiServer extends RunningServer {
  runtime: FlagRuntime
}

/** Runtime options beyond the configuration, for embedding and tests (e.g. `storeOptions.beforeCommit` to inject faults). */
export type FlatApiServerExtras = Partial<
  Pick<FlagRuntimeOptions, 'storeOptions' | 'maxStreamBufferBytes' | 'maxStreamConnections' | 'streamRetryMs'>
>

/** Opens the store, builds the app and listens; `close` ends streams, the server and the database. */
export async function startFlatApiServer(
  config: ServerConfig,
  logger: Logger = createLogger(),
  extras: FlatApiServerExtras = {},
): Promise<FlatApiServer> {
  if (!config.sdkKey) {
    logger.warn(
      'SDK_KEY is not set: authentication is OFF and anyone who can reach this server can change flags. Development use only.',
    )
  }
  const runtime = await openFlagRuntime({
    databaseUrl: config.databaseUrl,
    keepAliveMs: config.keepAliveMs,
    pollIntervalMs: config.pollIntervalMs,
    maxStreamBufferBytes: extras.maxStreamBufferBytes ?? config.maxStreamBufferBytes,
    maxStreamConnections: extras.maxStreamConnections ?? config.maxStreamConnections,
    streamRetryMs: extras.streamRetryMs ?? config.streamRetryMs,
    storeOptions: extras.storeOptions,
    auditRetentionMs: config.auditRetentionMs,
    logger,
  })
  const app = createFlatApiApp({
    runtime,
    sdkKey: config.sdkKey,
    receiver: { token: config.receiverToken, batchRetentionMs: config.batchRetentionMs },
    corsOrigins: config.corsOrigins,
    bodyLimit: config.bodyLimit,
    staticDir: config.staticDir,
    logger,
  })
  let running: RunningServer
  try {
    running = await listen(withFastPath(app, { runtime, sdkKey: config.sdkKey }), {
      host: config.host,
      port: config.port,
      keepAliveTimeoutMs: config.keepAliveTimeoutMs,
    })
  } catch (error) {
    await runtime.close()
    throw error
  }
  return {
    ...running,
    runtime,
    async close() {
      runtime.hub.stop()
      await running.close()
      await runtime.close()
    },
  }
}
