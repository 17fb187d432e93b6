import type { OfrepBulkResponse, OfrepEvaluationFailure, OfrepEvaluationSuccess } from '@flagsync/protocol'
import { parseRetryAfter, retryDelay } from '@flagsync/protocol'
import { systemClock } from '../clock.js'
import { DEFAULT_RECONNECT } from '../flag-stream.js'
import { MemoryImpressionQueue } from '../impressions/impression-queue.js'
import { ImpressionReporter } from '../impressions/impression-reporter.js'
import { browserOnlineSource } from '../online.js'
import type {
  ClientFlag,
  FlagClientListener,
  FlagClientStatus,
  FlagEvaluation,
  FlagSource,
  KeyValueStorage,
} from '../types.js'
import { RefreshStream } from './refresh-stream.js'
import type { RemoteFlagClient, RemoteFlagClientOptions } from './remote-types.js'
import { contextHash, toOfrepContext, ValueStore } from './remote-values.js'

const NOT_FOUND: FlagEvaluation = { value: undefined, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND', flagFound: false }

/**
 * Flags evaluated by the server (OFREP bulk evaluation with a client key): the page holds the values for its
 * context, never the rules. It follows the refresh stream the answer names, re-fetches on `setContext`, keeps the
 * last values of each context in `localStorage` (a start offline answers at creation) and reports impressions.
 *
 * @example
 * const flags = createRemoteFlagClient({ baseUrl: 'https://flags.example.com/', clientKey: 'pk_live_…', context: { user_id: user.id } })
 * await flags.ready()
 * if (flags.isEnabled('new-checkout')) showNewCheckout()
 */
export function createRemoteFlagClient(options: RemoteFlagClientOptions): RemoteFlagClient {
  const ofrep = ofrepBaseOf(options.baseUrl)
  const fetchImpl = options.fetch ?? ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args))
  const clock = options.clock ?? systemClock
  const random = options.random ?? Math.random
  const online = options.online ?? browserOnlineSource()
  const policy = { ...DEFAULT_RECONNECT, ...options.reconnect }
  const auth = { Authorization: `Bearer ${options.clientKey}` }
  const dbName = options.dbName ?? 'flagsync'
  const storeId = contextHash({ url: ofrep.href, key: options.clientKey })
  const store = new ValueStore(storageOf(options), `${dbName}:remote`, storeId, options.maxStoredContexts ?? 10)

  let context: Record<string, unknown> = { ...options.context }
  let hash = contextHash(context)
  let view: ReadonlyMap<string, ClientFlag> = new Map()
  let etag: string | null = null
  /** Bumped by every context change: an answer for an earlier context is dropped. */
  let generation = 0
  let retryTimer: unknown
  let closed = false
  let status: FlagClientStatus = {
    state: 'connecting',
    source: 'none',
    environmentId: options.environmentId ?? null,
    failures: 0,
    lastError: null,
  }
  const listeners = new Set<FlagClientListener>()
  let resolveReady!: () => void
  const readyPromise = new Promise<void>((resolve) => {
    resolveReady = resolve
  })
  const emit = (event: Parameters<FlagClientListener>[0]) => {
    for (const listener of listeners) listener(event)
  }
  const setStatus = (patch: Partial<FlagClientStatus>) => {
    status = { ...status, ...patch }
    emit({ type: 'status', status })
  }
  const use = (flags: ClientFlag[], source: FlagSource) => {
    const next = new Map(flags.map((f) => [f.key, f]))
    const keys = new Set([...view.keys(), ...next.keys()])
    const changedKeys = [...keys].filter((k) => JSON.stringify(view.get(k)) !== JSON.stringify(next.get(k)))
    if (changedKeys.length > 0 || view.size === 0) view = next
    if (changedKeys.length > 0) emit({ type: 'flags', changedKeys })
    if (status.source !== source) setStatus({ source })
    resolveReady()
  }

  const stream = new RefreshStream({
    fetch: fetchImpl,
    headers: auth,
    clock,
    random,
    policy,
    refetch: (tag) => void fetchValues(tag),
    reconnected: () => void fetchValues(),
  })

  const failed = (error: { message: string; status?: number }, retryAfterMs: number | null) => {
    const failures = status.failures + 1
    setStatus({ state: online.isOnline() ? 'reconnecting' : 'offline', failures, lastError: error })
    clock.clearTimeout(retryTimer)
    retryTimer = clock.setTimeout(() => void fetchValues(), retryDelay(failures - 1, retryAfterMs, policy, random))
  }
  /** One bulk evaluation for the current context; `refetchEtag`: the refresh stream's, so the server catches up first. */
  async function fetchValues(refetchEtag?: string): Promise<void> {
    const mine = generation
    const url = new URL('evaluate/flags', ofrep)
    if (refetchEtag !== undefined) url.searchParams.set('flagConfigEtag', refetchEtag)
    const headers: Record<string, string> = { ...auth, 'Content-Type': 'application/json' }
    // A 304 names no refresh stream: the tag is sent once one is followed (a stored one waits for the first answer).
    if (etag !== null && stream.url) headers['If-None-Match'] = etag
    const stale = () => closed || mine !== generation
    try {
      const body = JSON.stringify({ context: toOfrepContext(context) })
      const res = await fetchImpl(url, { method: 'POST', headers, body, cache: 'no-store' })
      if (stale()) return
      if (res.status !== 304 && !res.ok) {
        const text = await res.text().catch(() => '')
        const message = `evaluation answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`
        return failed({ message, status: res.status }, parseRetryAfter(res.headers.get('retry-after'), clock.now()))
      }
      if (res.status === 200) {
        const answer = (await res.json()) as OfrepBulkResponse
        if (stale()) return
        etag = res.headers.get('etag')
        const flags = answer.flags.map(toFlag)
        store.save(hash, { id: storeId, etag, flags, savedAt: clock.now() })
        use(flags, 'snapshot')
        const refresh = answer.eventStreams?.[0]?.url ?? answer.refreshConnections?.[0]?.url
        if (refresh) stream.follow(new URL(refresh, ofrep).href)
      }
      setStatus({ state: 'live', failures: 0, lastError: null })
    } catch (error) {
      if (!stale()) failed({ message: (error as Error).message }, null)
    }
  }

  const reporter = impressionReporter(options, ofrep, fetchImpl, clock, random, online, (error) =>
    emit({ type: 'error', source: 'impressions', error }),
  )
  if (options.environmentId) reporter.start()
  const offOnline = online.subscribe((isOnline) => {
    if (isOnline) void fetchValues()
    else setStatus({ state: 'offline' })
  })

  const saved = store.load(hash)
  if (saved) {
    etag = saved.etag
    use(saved.flags, 'cache')
  }
  void fetchValues()

  const evaluateKey = (key: string): FlagEvaluation => {
    const flag = view.get(key)
    if (!flag) return NOT_FOUND
    const result = resultOf(flag)
    reporter.record(key, context, result)
    return result
  }
  const rulesMode = () =>
    Promise.reject(new Error('flag edits are a rules-mode feature: createFlagClient({ ..., syncClient })'))

  return {
    ready: () => readyPromise,
    getFlag: (key) => view.get(key),
    allFlags: () => [...view.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    snapshot: () => view,
    evaluate: (key) => evaluateKey(key),
    isEnabled: (key) => evaluateKey(key).value === true,
    getValue<T>(key: string, _context: Record<string, unknown> | undefined, fallback: T): T {
      const { value } = evaluateKey(key)
      return value === undefined ? fallback : (value as T)
    },
    status: () => status,
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    context: () => context,
    async setContext(next) {
      const nextHash = contextHash(next)
      if (nextHash === hash || closed) return
      generation++
      context = { ...next }
      hash = nextHash
      // The new context's stored values answer at once; without any, the previous ones stay until the server's.
      const stored = store.load(hash)
      etag = stored?.etag ?? null
      if (stored) use(stored.flags, 'cache')
      await fetchValues()
    },
    createFlag: rulesMode,
    updateFlag: rulesMode,
    deleteFlag: rulesMode,
    flushImpressions: () => reporter.flush(),
    impressionStatus: () => reporter.status(),
    async close() {
      closed = true
      stream.close()
      offOnline()
      clock.clearTimeout(retryTimer)
      await reporter.close()
      setStatus({ state: 'closed' })
      listeners.clear()
    },
  }
}

/** A bulk entry as a flag of the client's view: the value the server evaluated, nothing else. */
function toFlag(entry: OfrepEvaluationSuccess | OfrepEvaluationFailure): ClientFlag {
  if ('errorCode' in entry) return { key: entry.key, is_enabled: true, errorCode: entry.errorCode }
  const flag: ClientFlag = { key: entry.key, is_enabled: entry.reason !== 'DISABLED', reason: entry.reason }
  if (entry.value !== undefined) flag.value = entry.value
  if (entry.variant !== undefined) flag.variant = entry.variant
  return flag
}

/** OFREP's `STATIC` and `UNKNOWN` read as `DEFAULT`: the value no rule or split chose. */
function resultOf(flag: ClientFlag): FlagEvaluation {
  if (typeof flag.errorCode === 'string') {
    return {
      value: undefined,
      reason: 'ERROR',
      errorCode: flag.errorCode as FlagEvaluation['errorCode'],
      flagFound: true,
    }
  }
  const reason = flag.reason === 'STATIC' || flag.reason === 'UNKNOWN' ? 'DEFAULT' : flag.reason
  const result: FlagEvaluation = {
    value: flag.value as FlagEvaluation['value'],
    reason: reason as FlagEvaluation['reason'],
    flagFound: true,
  }
  if (typeof flag.variant === 'string') result.variant = flag.variant
  return result
}

function impressionReporter(
  options: RemoteFlagClientOptions,
  ofrep: URL,
  fetchImpl: typeof fetch,
  clock: ImpressionReporterDeps['clock'],
  random: () => number,
  online: ImpressionReporterDeps['online'],
  onError: ImpressionReporterDeps['onError'],
): ImpressionReporter {
  const given = typeof options.impressions === 'object' ? options.impressions : {}
  return new ImpressionReporter({
    options: options.impressions === false ? { ...given, enabled: false } : given,
    sdkKey: options.clientKey,
    baseUrl: new URL(given.baseUrl?.replace(/\/?$/, '/') ?? '../../', ofrep),
    environmentId: () => options.environmentId ?? null,
    queue: () => new MemoryImpressionQueue(),
    onError,
    fetch: fetchImpl,
    clock,
    random,
    online,
  })
}
type ImpressionReporterDeps = ConstructorParameters<typeof ImpressionReporter>[0]

/** `…/ofrep/v1/`: the base URL given, or its `ofrep/v1/` (relative URLs resolve against the page). */
function ofrepBaseOf(value: unknown): URL {
  try {
    if (typeof value === 'string' && value.trim()) {
      const url = new URL(value.replace(/\/?$/, '/'), (globalThis as { location?: { href?: string } }).location?.href)
      return url.pathname.endsWith('/ofrep/v1/') ? url : new URL('ofrep/v1/', url)
    }
  } catch {}
  throw new TypeError(`options.baseUrl must be a URL (got ${JSON.stringify(value)})`)
}

/** The option's storage, else the page's `localStorage` where there is one and it may be used. */
function storageOf(options: RemoteFlagClientOptions): KeyValueStorage | undefined {
  if (options.storage !== undefined) return options.storage ?? undefined
  try {
    return (globalThis as { localStorage?: KeyValueStorage }).localStorage
  } catch {
    return undefined
  }
}
