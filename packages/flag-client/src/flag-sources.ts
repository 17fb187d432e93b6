import { parseSnapshot } from '@flagsync/protocol'
import type { FlagState } from './flag-state.js'
import { DEFAULT_RECONNECT, FlagStream } from './flag-stream.js'
import type { SnapshotPoller } from './snapshot-poller.js'
import type { Clock, FlagClientOptions, OnlineSource } from './types.js'

/** How a flag client reaches its server: the stream URL (with the key in its query, if so), headers, fetch, timing. */
export interface FlagConnection {
  url: URL
  headers: Record<string, string>
  fetch: typeof fetch
  clock: Clock
  random: () => number
  online: OnlineSource
}

/**
 * The stream, and the snapshot poller (`snapshotUrl`) that stands in after `snapshotAfterFailures` failed connections:
 * both feed `state`. `environmentKnown` hears the stream's environment; `retryNow` when the server answers again.
 * @example
 * const stream = flagStream(options, connection, state, environmentKnown, () => sync?.retryNow?.())
 * stream.start()
 */
export function flagStream(
  options: FlagClientOptions,
  net: FlagConnection,
  state: FlagState,
  environmentKnown: (environmentId: string | null) => void,
  retryNow: () => void,
): { start(): void; close(): void } {
  const poller = options.snapshotUrl ? lazyPoller(options.snapshotUrl, options, net, state) : undefined
  const snapshotAfter = options.snapshotAfterFailures ?? 3
  const stream = new FlagStream(
    {
      ...net,
      url: net.url.toString(),
      reconnect: { ...DEFAULT_RECONNECT, ...options.reconnect },
      bootstrapIdleMs: options.bootstrapIdleMs ?? 100,
    },
    {
      replaceAll(flags, environmentId, connectedAt) {
        environmentKnown(environmentId)
        poller?.stop()
        // Edits acknowledged before this connection began are in its bootstrap.
        state.useSet(flags, 'stream', connectedAt)
      },
      upsert(flag) {
        state.changed(() => state.local.serverChanged(flag.key, flag))
        state.persistSoon()
      },
      remove(key) {
        state.changed(() => state.local.serverChanged(key, undefined))
        state.persistSoon()
      },
      state(streamState, failures, error) {
        const lastError = error ? { message: error.message, ...statusOf(error) } : null
        const polling = poller?.active && streamState === 'reconnecting'
        const wasLive = state.status.state === 'live'
        // Live again: the stream's last error is history (a status that keeps it reads as still failing).
        const keptError = streamState === 'live' ? null : (lastError ?? state.status.lastError)
        state.setStatus({ state: polling ? 'polling' : streamState, failures, lastError: keptError })
        // The server answers again: the outbox need not wait out its backoff.
        if (streamState === 'live' && !wasLive) retryNow()
        if (streamState === 'reconnecting' && failures >= snapshotAfter) poller?.start()
        if (streamState === 'offline') poller?.stop()
      },
    },
  )
  return {
    start: () => stream.start(),
    close() {
      stream.close()
      poller?.stop()
    },
  }
}

/**
 * The snapshot poller, loaded on its first start: it stands in only after failed connections, so a page that never
 * loses its stream never loads it. A stop before it has loaded cancels that start.
 */
function lazyPoller(
  url: string,
  options: FlagClientOptions,
  net: FlagConnection,
  state: FlagState,
): Pick<SnapshotPoller, 'active' | 'start' | 'stop'> {
  let poller: SnapshotPoller | undefined
  let loading: Promise<unknown> | undefined
  let wanted = false
  return {
    get active() {
      return poller?.active === true
    },
    start() {
      wanted = true
      loading ??= import('./snapshot-poller.js').then(
        (m) => {
          poller = new m.SnapshotPoller(
            m.withKeyInQuery(url, options.sdkKeyInQuery ? options.sdkKey : undefined),
            net.headers,
            net.fetch,
            net.clock,
            options.snapshotIntervalMs ?? 15_000,
            (flags) => {
              state.useSet(flags, 'snapshot')
              state.setStatus({ state: 'polling' })
            },
            (error) => state.setStatus({ lastError: { message: error.message } }),
            parseSnapshot,
          )
        },
        () => {
          loading = undefined // the chunk did not load: the next failed connection tries again
        },
      )
      void loading.then(() => wanted && poller?.start())
    },
    stop() {
      wanted = false
      poller?.stop()
    },
  }
}

function statusOf(error: Error): { status?: number } {
  const status = (error as { status?: unknown }).status
  return typeof status === 'number' && status > 0 ? { status } : {}
}
