import { evaluate } from '@flagsync/evaluation'
import type { EvaluableFlag } from '@flagsync/protocol'
import { systemClock } from './clock.js'
import { flagEdits, outboxView } from './flag-outbox.js'
import { type FlagConnection, flagStream } from './flag-sources.js'
import { flagState, loadSets } from './flag-state.js'
import { clientReporter } from './impressions/client-reporter.js'
import type { ImpressionReporter } from './impressions/impression-reporter.js'
import { checkIndexedDbOptions } from './indexeddb-env.js'
import type { LocalView } from './local-view.js'
import { browserOnlineSource } from './online.js'
import type { FlagClient, FlagClientOptions, FlagEvaluation } from './types.js'

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
  const net = connectionOf(options)
  const { clock } = net
  const state = flagState(options, net.url, clock)
  const reporter = clientReporter(options, options.sdkKey, ['.', net.url], {
    ...net,
    environmentId: () => state.status.environmentId,
    onError: (error) => state.emit({ type: 'error', source: 'impressions', error }),
  })
  /** The flag service names the environment (stream or cache): impressions can be addressed from now on. */
  const environmentKnown = (environmentId: string | null) => {
    state.status = { ...state.status, environmentId }
    if (environmentId !== null) reporter.start()
  }
  const sync = options.syncClient
  const stream = flagStream(options, net, state, environmentKnown, () => sync?.retryNow?.())
  const outbox = outboxView(sync, state.local, state.changed, clock)
  loadSets(state, options, environmentKnown, outbox.attach)
  stream.start()

  return {
    ready: () => state.ready,
    ...flagReads(state.local, reporter),
    status: () => state.status,
    subscribe(listener) {
      state.listeners.add(listener)
      return () => state.listeners.delete(listener)
    },
    ...flagEdits(sync, state.local, options.collection ?? 'flags', outbox),
    flushImpressions: () => reporter.flush(),
    impressionStatus: () => reporter.status(),
    async close() {
      stream.close()
      await state.close(async () => {
        await outbox.close()
        await reporter.close()
      })
    },
  }
}

/** The stream URL (options checked), and the key in its query or in an `Authorization` header; the clock, fetch and online source. */
function connectionOf(options: FlagClientOptions): FlagConnection {
  const url = streamUrlOf(options.streamUrl)
  checkIndexedDbOptions(options)
  const headers: Record<string, string> = {}
  if (options.sdkKey && options.sdkKeyInQuery) url.searchParams.set('sdk_key', options.sdkKey)
  else if (options.sdkKey) headers.Authorization = `Bearer ${options.sdkKey}`
  return {
    url,
    headers,
    fetch: options.fetch ?? ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args)),
    clock: options.clock ?? systemClock,
    random: options.random ?? Math.random,
    online: options.online ?? browserOnlineSource(),
  }
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
