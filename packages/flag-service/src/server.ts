import { createLogger, type Logger, listen, type RunningServer } from '@flagsync/server-kit'
import { createServiceApp } from './app.js'
import { SETUP_VARIABLES, type ServiceConfig } from './config.js'
import { resolveDashboardDir } from './dashboard-route.js'
import { openServiceRuntime } from './open-service-runtime.js'
import type { ServiceRuntime, ServiceRuntimeOptions } from './service-runtime.js'
import { ensureWorkspace, type SetupResult } from './setup.js'

export interface FlagServiceServer extends RunningServer {
  runtime: ServiceRuntime
  /** What startup found or did: the workspace was created now, existed, or is missing (setup variables unset). */
  setup: SetupResult
}

/** Runtime options beyond the configuration, for tests and embedding: an injected clock, store hooks. */
export type FlagServiceServerExtras = Partial<
  Pick<ServiceRuntimeOptions, 'clock' | 'storeOptions' | 'poolMax' | 'busyTimeoutMs'>
>

/**
 * Opens the database (running both migration lists), sets the workspace up on
 * an empty database when the setup variables are given, builds the app and
 * listens. `close` ends the server, then the runtime.
 */
export async function startFlagServiceServer(
  config: ServiceConfig,
  logger: Logger = createLogger({ name: 'flagsync-service' }),
  extras: FlagServiceServerExtras = {},
): Promise<FlagServiceServer> {
  const runtime = await openServiceRuntime({ databaseUrl: config.databaseUrl, logger, ...extras })
  let running: RunningServer
  let setup: SetupResult
  try {
    setup = await ensureWorkspace(runtime, config.setup)
    logSetup(logger, setup)
    const app = createServiceApp(runtime, {
      bodyLimit: config.bodyLimit,
      corsOrigins: config.corsOrigins,
      cookieSecure: config.cookieSecure,
      stream: config.stream,
      impressionRetention: config.impressionRetention,
      schedulePollMs: config.schedulePollMs,
      staleAfterDays: config.staleAfterDays,
      dashboardDir: resolveDashboardDir(config.dashboardDir),
      webhooks: config.webhooks,
    })
    running = await listen(app, { host: config.host, port: config.port, keepAliveTimeoutMs: config.keepAliveTimeoutMs })
  } catch (error) {
    await runtime.close()
    throw error
  }
  return {
    ...running,
    runtime,
    setup,
    async close() {
      await running.close()
      await runtime.close()
    },
  }
}

function logSetup(logger: Logger, setup: SetupResult): void {
  if (setup.status === 'missing') {
    logger.warn(
      `the workspace is not set up: nobody can log in. Restart with ${SETUP_VARIABLES.join(', ')} set ` +
        '(e.g. ADMIN_EMAIL=you@example.com ADMIN_PASSWORD=<8+ characters> WORKSPACE_NAME=Acme) to create it and its first admin',
    )
  } else if (setup.status === 'created') {
    // The key is printed in the message on purpose (the logger redacts key fields): this is the only time it exists
    // in clear, and the operator needs it to connect a first SDK. Rotate it from the API if logs are shared.
    logger.info(
      `created workspace ${JSON.stringify(setup.workspaceName)} with admin ${setup.adminEmail} and project "Default" ` +
        `(${setup.projectId}); its Production SDK key, shown only now: ${setup.sdkKey}`,
    )
  } else {
    logger.info(`workspace ${JSON.stringify(setup.workspaceName)} is set up`)
  }
}
