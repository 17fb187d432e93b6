import type { OfrepBulkResponse, OfrepEvaluationFailure, OfrepEvaluationSuccess } from '@flagsync/protocol'
import { parseRetryAfter, type RetryPolicy, retryDelay } from '@flagsync/protocol'
import { systemClock } from '../clock.js'
import { DEFAULT_RECONNECT } from '../flag-stream.js'
import { clientReporter } from '../impressions/client-reporter.js'
import { browserOnlineSource } from '../online.js'
import type { ClientFlag, Clock, FlagEvaluation, KeyValueStorage, OnlineSource } from '../types.js'
import { RefreshStream } from './refresh-stream.js'
import type { RemoteFlagClient, RemoteFlagClientOptions } from './remote-types.js'
import { contextHash, toOfrepContext, ValueStore } from './remote-values.js'
import { RemoteView } from './remote-view.js'

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
  const storeId = contextHash({ url: ofrep.href, key: options.clientKey })
  const prefix = `${options.dbName ?? 'flagsync'}:remote`
  const store = new ValueStore(storageOf(options), prefix, storeId, options.maxStoredContexts ?? 10)
  const view = new RemoteView(options.environmentId ?? null)
  const state: FetchState = { context: { ...options.context }, hash: '', etag: null, latest: 0, closed: false }
  state.hash = contextHash(state.context)

  const io = { fetch: fetchImpl, clock, random, online }
  const stream = new RefreshStream({
    fetch: fetchImpl,
    headers: auth,
    clock,
    random,
    policy,
    refetch: (tag) => void fetchValues(tag),
    dropped: () => view.setStatus({ state: online.isOnline() ? 'reconnecting' : 'offline' }),
    reconnected: () => void fetchValues(),
  })
  const fetchValues = valueFetcher({ ofrep, auth, policy, ...io }, state, {
    view,
    store,
    storeId,
    stream,
  })
  const reporter = clientReporter(options, options.clientKey, ['../../', ofrep], {
    ...io,
    environmentId: () => options.environmentId ?? null,
    onError: (error) => view.emit({ type: 'error', source: 'impressions', error }),
  })
  if (options.environmentId) reporter.start()
  const offOnline = online.subscribe((isOnline) => {
    if (isOnline) void fetchValues()
    else view.setStatus({ state: 'offline' })
  })
  /** The stored values of the current context answer at once; the server's when they arrive. */
  const fromStore = () => {
    const stored = store.load(state.hash)
    state.etag = stored?.etag ?? null
    if (stored) view.use(stored.flags, 'cache')
  }
  fromStore()
  void fetchValues()

  const evaluateKey = (key: string): FlagEvaluation => {
    const result = view.result(key)
    reporter.record(key, state.context, result)
    return result
  }

  return {
    ready: () => view.ready,
    getFlag: (key) => view.flags.get(key),
    allFlags: () => view.allFlags(),
    snapshot: () => view.flags,
    evaluate: (key) => evaluateKey(key),
    isEnabled: (key) => evaluateKey(key).value === true,
    getValue<T>(key: string, _context: Record<string, unknown> | undefined, fallback: T): T {
      const { value } = evaluateKey(key)
      return value === undefined ? fallback : (value as T)
    },
    status: () => view.status,
    subscribe(listener) {
      view.listeners.add(listener)
      return () => view.listeners.delete(listener)
    },
    context: () => state.context,
    async setContext(next) {
      const hash = contextHash(next)
      if (hash === state.hash || state.closed) return
      state.context = { ...next }
      state.hash = hash
      // Without stored values for the new context, the previous values stay until the server's arrive.
      fromStore()
      await fetchValues()
    },
    createFlag: rulesMode,
    updateFlag: rulesMode,
    deleteFlag: rulesMode,
    flushImpressions: () => reporter.flush(),
    impressionStatus: () => reporter.status(),
    async close() {
      state.closed = true
      stream.close()
      offOnline()
      clock.clearTimeout(state.retryTimer)
      await reporter.close()
      view.setStatus({ state: 'closed' })
      view.listeners.clear()
    },
  }
}

/** Edits of a remote client: local edits through a sync client are a rules-mode feature. */
const rulesMode = () =>
  Promise.reject(new Error('flag edits are a rules-mode feature: createFlagClient({ ..., syncClient })'))

/** The context being served and where its fetches stand. */
interface FetchState {
  context: Record<string, unknown>
  /** `contextHash(context)`: its key in the value store. */
  hash: string
  /** The ETag of the values served, for `If-None-Match`. */
  etag: string | null
  /** The newest request: the answer to an earlier one (another context's, or overtaken by a refresh) is dropped. */
  latest: number
  closed: boolean
  retryTimer?: unknown
}

interface FetchDeps {
  ofrep: URL
  auth: Record<string, string>
  fetch: typeof fetch
  clock: Clock
  random: () => number
  policy: RetryPolicy
  online: OnlineSource
}

/**
 * The bulk evaluation of the current context: a 200 is served, stored and names the refresh stream to follow; a 304
 * keeps the values; a failure is retried with backoff (and Retry-After). `refetchEtag`: the refresh stream's, so
 * the server catches up with the change log first.
 */
function valueFetcher(
  deps: FetchDeps,
  state: FetchState,
  out: { view: RemoteView; store: ValueStore; storeId: string; stream: RefreshStream },
) {
  const { view, store, stream } = out
  const failed = (error: { message: string; status?: number }, retryAfterMs: number | null) => {
    const failures = view.status.failures + 1
    view.setStatus({ state: deps.online.isOnline() ? 'reconnecting' : 'offline', failures, lastError: error })
    deps.clock.clearTimeout(state.retryTimer)
    const delay = retryDelay(failures - 1, retryAfterMs, deps.policy, deps.random)
    state.retryTimer = deps.clock.setTimeout(() => void fetchValues(), delay)
  }
  async function fetchValues(refetchEtag?: string): Promise<void> {
    const mine = ++state.latest
    const stale = () => state.closed || mine !== state.latest
    const url = new URL('evaluate/flags', deps.ofrep)
    if (refetchEtag !== undefined) url.searchParams.set('flagConfigEtag', refetchEtag)
    const headers: Record<string, string> = { ...deps.auth, 'Content-Type': 'application/json' }
    // A 304 names no refresh stream: the tag is sent once one is followed (a stored one waits for the first answer).
    if (state.etag !== null && stream.url) headers['If-None-Match'] = state.etag
    try {
      const body = JSON.stringify({ context: toOfrepContext(state.context) })
      const res = await deps.fetch(url, { method: 'POST', headers, body, cache: 'no-store' })
      if (stale()) return
      if (res.status !== 304 && !res.ok) {
        const text = await res.text().catch(() => '')
        const message = `evaluation answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`
        return failed(
          { message, status: res.status },
          parseRetryAfter(res.headers.get('retry-after'), deps.clock.now()),
        )
      }
      if (res.status === 200) {
        const answer = (await res.json()) as OfrepBulkResponse
        if (stale()) return
        state.etag = res.headers.get('etag')
        const flags = answer.flags.map(toFlag)
        store.save(state.hash, { id: out.storeId, etag: state.etag, flags, savedAt: deps.clock.now() })
        view.use(flags, 'snapshot')
        const refresh = answer.eventStreams?.[0]?.url ?? answer.refreshConnections?.[0]?.url
        if (refresh) stream.follow(new URL(refresh, deps.ofrep).href)
      }
      view.setStatus({ state: 'live', failures: 0, lastError: null })
    } catch (error) {
      if (!stale()) failed({ message: (error as Error).message }, null)
    }
  }
  return fetchValues
}

/** A bulk entry as a flag of the client's view: the value the server evaluated, nothing else. */
function toFlag(entry: OfrepEvaluationSuccess | OfrepEvaluationFailure): ClientFlag {
  if ('errorCode' in entry) return { key: entry.key, is_enabled: true, errorCode: entry.errorCode }
  const flag: ClientFlag = { key: entry.key, is_enabled: entry.reason !== 'DISABLED', reason: entry.reason }
  if (entry.value !== undefined) flag.value = entry.value
  if (entry.variant !== undefined) flag.variant = entry.variant
  return flag
}

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
