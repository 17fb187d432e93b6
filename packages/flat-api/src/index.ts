export type { FlatApiAppOptions } from './app.js'
export { createFlatApiApp } from './app.js'
export type { ServerConfig } from './config.js'
export { ConfigError, loadConfig } from './config.js'
export type { FlagRuntime, FlagRuntimeOptions } from './flag-runtime.js'
/** @public The README's embedding example opens the runtime itself. */
export { openFlagRuntime } from './flag-runtime.js'
export type { EarlyServer, ListenEarlyOptions } from './listen-early.js'
/** @public The README's fast-start recipe binds the port before importing the rest. */
export { listenEarly } from './listen-early.js'
export type { FlatApiServer, FlatApiServerExtras } from './server.js'
export { startFlatApiServer } from './server.js'
