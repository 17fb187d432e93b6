import { createLogger, type Logger, listen, type RunningServer } from '@flagsync/server-kit'
import { createFlatApiApp } from './app.js'
import type { ServerConfig } from './config.js'
import { withFastPath } from './fast-path.js'
import { type FlagRuntime, type FlagRuntimeOptions, openFlagRuntime } from './flag-runtime.js'
import type { EarlyServer } from './listen-early.js'

export interface FlatApiServer extends RunningServer {
  runtime: FlagRuntime
}

/** Runtime options beyond the configuration, for embedding and tests (e.g. `storeOptions.beforeCommit` to inject faults). */
export type FlatApiServerExtras = Partial<
  Pick<FlagRuntimeOptions, 'storeOptions' | 'maxStreamBufferBytes' | 'maxStreamConnections' | 'streamRetryMs'>
> & {
  /**
   * A port bound beforehand with `listenEarly` (the CLI binds it before loading
   * anything else); its held requests are answered once the flags are loaded.
   * Closed if the server cannot start.
   */
  bound?: EarlyServer
}

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
  let runtime: FlagRuntime
  try {
    runtime = await openFlagRuntime({
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
  } catch (error) {
    await extras.bound?.close()
    throw error
  }
  const app = createFlatApiApp({
    runtime,
    sdkKey: config.sdkKey,
    clientKey: config.clientKey,
    receiver: { token: config.receiverToken, batchRetentionMs: config.batchRetentionMs },
    corsOrigins: config.corsOrigins,
    bodyLimit: config.bodyLimit,
    staticDir: config.staticDir,
    logger,
  })
  let running: RunningServer
  try {
    if (extras.bound) {
      extras.bound.server.keepAliveTimeout = config.keepAliveTimeoutMs ?? 65_000
      extras.bound.server.headersTimeout = extras.bound.server.keepAliveTimeout + 1_000
      extras.bound.serve(withFastPath(app, { runtime, sdkKey: config.sdkKey, clientKey: config.clientKey }))
      running = extras.bound
    } else
      running = await listen(withFastPath(app, { runtime, sdkKey: config.sdkKey, clientKey: config.clientKey }), {
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
