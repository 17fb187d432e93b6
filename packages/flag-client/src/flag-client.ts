import { evaluate } from '@flagsync/evaluation'
import type { EvaluableFlag, Operation } from '@flagsync/protocol'
import { applyPending } from './apply-pending.js'
import { FlagCache } from './flag-cache.js'
import { DEFAULT_RECONNECT, FlagStream } from './flag-stream.js'
import { DexieImpressionQueue, MemoryImpressionQueue } from './impressions/impression-queue.js'
import { ImpressionReporter } from './impressions/impression-reporter.js'
import { checkIndexedDbOptions, resolveIndexedDb } from './indexeddb-env.js'
import { browserOnlineSource } from './online.js'
import { SnapshotPoller } from './snapshot-poller.js'
import type {
  ClientFlag,
  Clock,
  FlagClient,
  FlagClientListener,
  FlagClientOptions,
  FlagClientStatus,
  FlagConflict,
  FlagEvaluation,
  FlagSource,
} from './types.js'

const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (cb, ms) => setTimeout(cb, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
}

interface AckedOp {
  op: Operation
  ackedAt: number
}

/**
 * Live flags: the server's set (from the stream, a snapshot or the IndexedDB
 * cache) with this client's unacknowledged edits on top, evaluated locally.
 *
 * @example
 * const flags = createFlagClient({ streamUrl: 'https://flags.example.com/stream', sdkKey })
 * await flags.ready()
 * if (flags.isEnabled('new-checkout', { user_id: user.id })) showNewCheckout()
 */
export function createFlagClient(options: FlagClientOptions): FlagClient {
  const url = new URL(options.streamUrl) // throws on a relative or malformed URL
  checkIndexedDbOptions(options)
  const clock = options.clock ?? systemClock
  const fetchImpl = options.fetch ?? ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args))
  const collection = options.collection ?? 'flags'
  const online = options.online ?? browserOnlineSource()
  const echoTimeoutMs = options.echoTimeoutMs ?? 30_000
  const headers: Record<string, string> = {}
  if (options.sdkKey && options.sdkKeyInQuery) url.searchParams.set('sdk_key', options.sdkKey)
  else if (options.sdkKey) headers.Authorization = `Bearer ${options.sdkKey}`

  let server = new Map<string, ClientFlag>()
  let pending: Operation[] = []
  let acked: AckedOp[] = []
  /** Conflicts on flags of this collection, by key. */
  let conflicts = new Map<string, FlagConflict>()
  let view: Map<string, ClientFlag> | undefined
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
  const cache = cacheDb && new FlagCache(`${options.dbName ?? 'flagsync'}:flags`, url.toString(), cacheDb)
  let persistTimer: unknown

  const currentView = () => {
    if (!view) {
      const now = clock.now()
      acked = acked.filter((a) => now - a.ackedAt < echoTimeoutMs)
      const ops = [...acked.map((a) => a.op), ...pending]
      // A conflicted flag reads as the server has it, with the conflict attached, until it is resolved.
      view = applyPending(
        server,
        conflicts.size > 0 ? ops.filter((op) => op.collection !== collection || !conflicts.has(op.recordId)) : ops,
        collection,
      )
      for (const [key, conflict] of conflicts) {
        const flag = server.get(key)
        if (flag) view.set(key, { ...flag, conflict })
      }
    }
    return view
  }

  /** Recomputes the view and tells listeners which keys now read differently. */
  const changed = (mutate: () => void) => {
    const before = currentView()
    mutate()
    view = undefined
    const after = currentView()
    const keys = new Set([...before.keys(), ...after.keys()])
    const changedKeys = [...keys].filter((k) => before.get(k) !== after.get(k))
    if (changedKeys.length > 0) emit({ type: 'flags', changedKeys })
    // Every key reads the same: keep the old map, so `snapshot()` changes identity only with a `flags` event.
    else view = before
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
      void cache.save([...server.values()], status.environmentId, clock.now()).catch(() => {})
    }, 50)
  }
  const useSet = (flags: Map<string, ClientFlag>, source: FlagSource) => {
    changed(() => {
      server = flags
    })
    setStatus({ source })
    persistSoon()
    resolveReady()
  }
  const echoed = (key: string) => {
    acked = acked.filter((a) => a.op.recordId !== key || a.op.collection !== collection)
  }

  const impressionOptions = typeof options.impressions === 'object' ? options.impressions : {}
  const reporter = new ImpressionReporter({
    options: options.impressions === false ? { ...impressionOptions, enabled: false } : impressionOptions,
    sdkKey: options.sdkKey,
    baseUrl: new URL(impressionOptions.baseUrl?.replace(/\/?$/, '/') ?? '.', options.streamUrl),
    environmentId: () => status.environmentId,
    queue: () => {
      const db = resolveIndexedDb(options)
      return db
        ? new DexieImpressionQueue(`${options.dbName ?? 'flagsync'}:impressions`, db.indexedDB, db.IDBKeyRange)
        : new MemoryImpressionQueue()
    },
    onError: (error) => emit({ type: 'error', source: 'impressions', error }),
    fetch: fetchImpl,
    clock,
    random: options.random ?? Math.random,
    online,
  })
  /** Document 1 names the environment (stream or cache): impressions can be addressed from now on. */
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
        // Edits acknowledged before this connection began are in its bootstrap.
        acked = acked.filter((a) => a.ackedAt > connectedAt)
        status = { ...status, environmentId }
        environmentKnown()
        poller?.stop()
        useSet(flags, 'stream')
      },
      upsert(flag) {
        changed(() => {
          server = new Map(server).set(flag.key, flag)
          echoed(flag.key)
        })
        persistSoon()
      },
      remove(key) {
        changed(() => {
          server = new Map(server)
          server.delete(key)
          echoed(key)
        })
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

  // The outbox: queued edits show at once; acknowledged ones until the stream echoes them.
  const sync = options.syncClient
  let refreshing: Promise<void> = Promise.resolve()
  const refreshPending = () => {
    if (!sync) return Promise.resolve()
    refreshing = refreshing.then(async () => {
      const [entries, found] = await Promise.all([
        sync.outbox().catch(() => undefined),
        sync.conflicts?.().catch(() => undefined) ?? [],
      ])
      if (!entries) return
      changed(() => {
        pending = entries.map((e) => e.operation)
        if (found) conflicts = new Map(found.filter((c) => c.collection === collection).map((c) => [c.recordId, c]))
      })
    })
    return refreshing
  }
  const unsubscribers: Array<() => void> = []
  if (sync) {
    unsubscribers.push(sync.subscribe(() => void refreshPending()))
    unsubscribers.push(
      sync.onDelivered((_batchId, operations, info) => {
        // A replayed batch changed nothing now: the server's state (and its stream) already tells the truth.
        if (info?.duplicate) return
        const now = clock.now()
        changed(() => {
          acked = [
            ...acked,
            ...operations.filter((op) => op.collection === collection).map((op) => ({ op, ackedAt: now })),
          ]
        })
      }),
    )
    void refreshPending()
  }
  /**
   * Every local edit is based on the revision of the flag as the server last
   * sent it. Creating a key this client does not have is based on the newest
   * revision it knows: a flag someone else created under that key since is a
   * conflict (kind `exists`), not silently replaced.
   */
  const baseOf = (key: string, creating = false): { baseRevision?: number } => {
    let revision = server.get(key)?.revision
    if (revision === undefined && creating) {
      for (const flag of server.values()) {
        if (typeof flag.revision === 'number' && flag.revision > (revision ?? -1)) revision = flag.revision
      }
    }
    return typeof revision === 'number' ? { baseRevision: revision } : {}
  }
  const requireSync = () => {
    if (!sync) throw new Error('flag edits need a sync client: createFlagClient({ ..., syncClient })')
    return sync
  }

  void cache
    ?.load()
    .then((saved) => {
      if (saved && status.source === 'none') {
        status = { ...status, environmentId: saved.environmentId }
        environmentKnown()
        useSet(new Map(saved.flags.map((f) => [f.key, f])), 'cache')
      }
    })
    .catch(() => {})
  stream.start()

  const getFlag = (key: string) => currentView().get(key)
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
    ready: () => readyPromise,
    getFlag,
    allFlags: () => [...currentView().values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    snapshot: currentView,
    evaluate: evaluateKey,
    isEnabled: (key, context) => evaluateKey(key, context).value === true,
    getValue<T>(key: string, context: Record<string, unknown> | undefined, fallback: T): T {
      const { value } = evaluateKey(key, context)
      return value === undefined ? fallback : (value as T)
    },
    status: () => status,
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    async createFlag(flag) {
      const { revision: _readOnly, conflict: _local, ...record } = flag
      await requireSync().insert(collection, record, { recordId: flag.key, ...baseOf(flag.key, true) })
      await refreshPending()
    },
    async updateFlag(key, changes) {
      await requireSync().update(collection, key, changes, baseOf(key))
      await refreshPending()
    },
    async deleteFlag(key) {
      await requireSync().delete(collection, key, baseOf(key))
      await refreshPending()
    },
    flushImpressions: () => reporter.flush(),
    impressionStatus: () => reporter.status(),
    async close() {
      stream.close()
      poller?.stop()
      for (const off of unsubscribers) off()
      if (persistTimer !== undefined) clock.clearTimeout(persistTimer)
      await refreshing
      await reporter.close()
      if (cache) {
        // Only an authoritative set is saved: closing before anything arrived must not wipe the cache.
        if (status.source === 'stream' || status.source === 'snapshot') {
          await cache.save([...server.values()], status.environmentId, clock.now()).catch(() => {})
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

/** The snapshot takes the key the same way the stream does: in the query when `sdkKeyInQuery` is set. */
function withKeyInQuery(url: string, sdkKey: string | undefined): string {
  if (!sdkKey) return url
  const withKey = new URL(url)
  withKey.searchParams.set('sdk_key', sdkKey)
  return withKey.toString()
}
