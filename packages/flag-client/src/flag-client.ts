import { evaluate } from '@flagsync/evaluation'
import type { EvaluableFlag } from '@flagsync/protocol'
import { systemClock } from './clock.js'
import { FlagCache, type SavedSet } from './flag-cache.js'
import { flagEdits, outboxView } from './flag-outbox.js'
import { bootstrapSet, isNewerFlagSet } from './flag-sets.js'
import { DEFAULT_RECONNECT, FlagStream } from './flag-stream.js'
import { clientReporter } from './impressions/client-reporter.js'
import type { ImpressionReporter } from './impressions/impression-reporter.js'
import { checkIndexedDbOptions, resolveIndexedDb, resolveLocalStorage } from './indexeddb-env.js'
import { LocalView } from './local-view.js'
import { browserOnlineSource } from './online.js'
import { SnapshotPoller, withKeyInQuery } from './snapshot-poller.js'
import type {
  ClientFlag,
  FlagClient,
  FlagClientListener,
  FlagClientOptions,
  FlagClientStatus,
  FlagEvaluation,
  FlagSource,
} from './types.js'

/**
 * Live flags: the server's set (from the stream, a snapshot or the flag
 * cache) with this client's unacknowledged edits on top, evaluated locally.
 *
 * @example
 * const flags = createFlagClient({ streamUrl: 'https://flags.example.com/stream', sdkKey })
 * await flags.ready()
 * if (flags.isEnabled('new-checkout', { user_id: user.id })) showNewCheckout()
 */
export function createFlagClient(options: FlagClientOptions): FlagClient {
  const url = streamUrlOf(options.streamUrl)
  checkIndexedDbOptions(options)
  const clock = options.clock ?? systemClock
  const fetchImpl = options.fetch ?? ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args))
  const collection = options.collection ?? 'flags'
  const online = options.online ?? browserOnlineSource()
  const echoTimeoutMs = options.echoTimeoutMs ?? 30_000
  const headers: Record<string, string> = {}
  if (options.sdkKey && options.sdkKeyInQuery) url.searchParams.set('sdk_key', options.sdkKey)
  else if (options.sdkKey) headers.Authorization = `Bearer ${options.sdkKey}`

  const local = new LocalView(collection)
  let status: FlagClientStatus = {
    state: 'connecting',
    source: 'none',
    environmentId: null,
    failures: 0,
    lastError: null,
  }
  const listeners = new Set<FlagClientListener>()
  let resolveReady!: () => void
  const readyPromise = new Promise<void>((resolve) => {
    resolveReady = resolve
  })

  const cacheDb = options.persist === false ? undefined : resolveIndexedDb(options)
  const storage = options.persist === false ? undefined : resolveLocalStorage(options)
  const cache =
    (cacheDb || storage) && new FlagCache(`${options.dbName ?? 'flagsync'}:flags`, url.toString(), cacheDb, storage)
  let persistTimer: unknown

  /** Applies a change to the view and tells listeners which keys now read differently. */
  const changed = (mutate: () => string[]) => {
    const now = clock.now()
    const expired = local.dropAcked((a) => now - a.ackedAt >= echoTimeoutMs)
    const changedKeys = [...new Set([...expired, ...mutate()])]
    if (changedKeys.length > 0) emit({ type: 'flags', changedKeys })
  }
  const emit = (event: Parameters<FlagClientListener>[0]) => {
    for (const listener of listeners) listener(event)
  }
  const setStatus = (patch: Partial<FlagClientStatus>) => {
    status = { ...status, ...patch }
    emit({ type: 'status', status })
  }
  const persistSoon = () => {
    if (!cache || persistTimer !== undefined) return
    persistTimer = clock.setTimeout(() => {
      persistTimer = undefined
      void cache.save([...local.serverFlags.values()], status.environmentId, clock.now()).catch(() => {})
    }, 50)
  }
  /** `connectedAt`: the set is a stream bootstrap, which holds every edit acknowledged before it. */
  const useSet = (flags: Map<string, ClientFlag>, source: FlagSource, connectedAt?: number) => {
    changed(() => [
      ...(connectedAt === undefined ? [] : local.dropAcked((a) => a.ackedAt <= connectedAt)),
      ...local.replaceServer(flags),
    ])
    setStatus({ source })
    // Only the server's own sets are saved: one read from the cache already is, and a bootstrap names no environment.
    if (source === 'stream' || source === 'snapshot') persistSoon()
    resolveReady()
  }
  const reporter = clientReporter(options, options.sdkKey, ['.', url], {
    environmentId: () => status.environmentId,
    onError: (error) => emit({ type: 'error', source: 'impressions', error }),
    fetch: fetchImpl,
    clock,
    random: options.random ?? Math.random,
    online,
  })
  /** The flag service names the environment (stream or cache): impressions can be addressed from now on. */
  const environmentKnown = () => {
    if (status.environmentId !== null) reporter.start()
  }

  const poller = options.snapshotUrl
    ? new SnapshotPoller(
        withKeyInQuery(options.snapshotUrl, options.sdkKeyInQuery ? options.sdkKey : undefined),
        headers,
        fetchImpl,
        clock,
        options.snapshotIntervalMs ?? 15_000,
        (flags) => {
          useSet(flags, 'snapshot')
          setStatus({ state: 'polling' })
        },
        (error) => setStatus({ lastError: { message: error.message } }),
      )
    : undefined
  const snapshotAfter = options.snapshotAfterFailures ?? 3

  const stream = new FlagStream(
    {
      url: url.toString(),
      headers,
      fetch: fetchImpl,
      clock,
      random: options.random ?? Math.random,
      reconnect: { ...DEFAULT_RECONNECT, ...options.reconnect },
      bootstrapIdleMs: options.bootstrapIdleMs ?? 100,
      online,
    },
    {
      replaceAll(flags, environmentId, connectedAt) {
        status = { ...status, environmentId }
        environmentKnown()
        poller?.stop()
        // Edits acknowledged before this connection began are in its bootstrap.
        useSet(flags, 'stream', connectedAt)
      },
      upsert(flag) {
        changed(() => local.serverChanged(flag.key, flag))
        persistSoon()
      },
      remove(key) {
        changed(() => local.serverChanged(key, undefined))
        persistSoon()
      },
      state(state, failures, error) {
        const lastError = error ? { message: error.message, ...statusOf(error) } : null
        const polling = poller?.active && state === 'reconnecting'
        const wasLive = status.state === 'live'
        // Live again: the stream's last error is history (a status that keeps it reads as still failing).
        const keptError = state === 'live' ? null : (lastError ?? status.lastError)
        setStatus({ state: polling ? 'polling' : state, failures, lastError: keptError })
        // The server answers again: the outbox need not wait out its backoff.
        if (state === 'live' && !wasLive) sync?.retryNow?.()
        if (state === 'reconnecting' && failures >= snapshotAfter) poller?.start()
        if (state === 'offline') poller?.stop()
      },
    },
  )

  const sync = options.syncClient
  const outbox = outboxView(sync, local, changed, clock)

  /** The cached set replaces nothing but a bootstrap it is newer than (a server-rendered page keeps its flags). */
  const fromCache = (saved: SavedSet | undefined) => {
    if (!saved || (status.source !== 'none' && status.source !== 'bootstrap')) return
    // The stream URL's environment, whichever set is served: impressions can be addressed before the stream.
    status = { ...status, environmentId: saved.environmentId }
    environmentKnown()
    if (status.source === 'none' || isNewerFlagSet(saved.flags, local.serverFlags.values())) {
      useSet(new Map(saved.flags.map((f) => [f.key, f])), 'cache')
    }
  }
  const bootstrap = bootstrapSet(options.bootstrap)
  if (bootstrap) useSet(bootstrap, 'bootstrap')
  // The localStorage copy answers before this function returns; IndexedDB once it has opened.
  const saved = cache?.loadNow()
  if (cache && !saved) {
    void cache
      .load()
      .then(fromCache)
      .catch(() => {})
      .then(outbox.attach)
  } else {
    fromCache(saved)
    outbox.attach()
  }
  stream.start()

  return {
    ready: () => readyPromise,
    ...flagReads(local, reporter),
    status: () => status,
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    ...flagEdits(sync, local, collection, outbox),
    flushImpressions: () => reporter.flush(),
    impressionStatus: () => reporter.status(),
    async close() {
      stream.close()
      poller?.stop()
      if (persistTimer !== undefined) clock.clearTimeout(persistTimer)
      await outbox.close()
      await reporter.close()
      if (cache) {
        // Only an authoritative set is saved: closing before anything arrived must not wipe the cache.
        if (status.source === 'stream' || status.source === 'snapshot') {
          await cache.save([...local.serverFlags.values()], status.environmentId, clock.now()).catch(() => {})
        }
        cache.close()
      }
      setStatus({ state: 'closed' })
      listeners.clear()
    },
  }
}

function statusOf(error: Error): { status?: number } {
  const status = (error as { status?: unknown }).status
  return typeof status === 'number' && status > 0 ? { status } : {}
}

/** The stream URL: absolute, or relative to the page (as EventSource takes it); anything else names the option. */
function streamUrlOf(value: unknown): URL {
  try {
    // Only a non-blank string: in a page `new URL(undefined, page)` would resolve to <page>/undefined.
    if (typeof value === 'string' && value.trim()) {
      return new URL(value, (globalThis as { location?: { href?: string } }).location?.href)
    }
  } catch {}
  throw new TypeError(`options.streamUrl must be a URL (got ${JSON.stringify(value)})`)
}

/** The reads of a rules-mode client: its view (server flags with local edits on top), evaluated here. */
function flagReads(
  local: LocalView,
  reporter: ImpressionReporter,
): Pick<FlagClient, 'getFlag' | 'allFlags' | 'snapshot' | 'evaluate' | 'isEnabled' | 'getValue'> {
  const getFlag = (key: string) => local.view.get(key)
  const evaluateKey = (key: string, context: Record<string, unknown> = {}): FlagEvaluation => {
    const flag = getFlag(key)
    if (!flag) return { value: undefined, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND', flagFound: false }
    const result: FlagEvaluation = {
      ...evaluate(flag as EvaluableFlag, context, (k) => getFlag(k) as EvaluableFlag | undefined),
      flagFound: true,
    }
    reporter.record(key, context, result)
    return result
  }
  return {
    getFlag,
    // Keys are unique in a view: no two flags compare equal.
    allFlags: () => [...local.view.values()].sort((a, b) => (a.key > b.key ? 1 : -1)),
    snapshot: () => local.view,
    evaluate: evaluateKey,
    isEnabled: (key, context) => evaluateKey(key, context).value === true,
    getValue<T>(key: string, context: Record<string, unknown> | undefined, fallback: T): T {
      const { value } = evaluateKey(key, context)
      return value === undefined ? fallback : (value as T)
    },
  }
}
