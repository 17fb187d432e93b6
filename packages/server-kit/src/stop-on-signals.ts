import type { Logger } from './logger.js'

/**
 * SIGTERM/SIGINT close the server (streams, sockets, database) and exit 0, or
 * exit 1 when closing fails or takes longer than `timeoutMs` (default 5 s).
 */
export function stopOnSignals(server: { close(): Promise<void> }, logger: Logger, timeoutMs = 5000): void {
  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info(`${signal}: closing streams, the server and the database`)
    setTimeout(() => process.exit(1), timeoutMs).unref()
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    )
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}
