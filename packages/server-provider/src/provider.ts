import { evaluate, fromOpenFeatureContext, type ResolutionKind, toResolution } from '@flagsync/evaluation'
import { type EvaluableFlag, type RetryPolicy, resolveRetryPolicy } from '@flagsync/protocol'
import {
  type EvaluationContext,
  type JsonValue,
  OpenFeatureEventEmitter,
  type Provider,
  ProviderEvents,
  ProviderFatalError,
  type ResolutionDetails,
} from '@openfeature/server-sdk'
import { FlagStream } from './flag-stream.js'
import { ImpressionReporter, type ServerImpressionOptions, type ServerImpressionStatus } from './impressions.js'
import { StreamHttpError } from './read-stream.js'

/** Options of {@link FlagsyncServerProvider}. */
export interface FlagsyncServerProviderOptions {
  /** URL of `/stream`: the flat API's, or the flag service's (whose SDK key picks the environment). */
  streamUrl: string
  /** The server SDK key, sent as `Authorization: Bearer <key>` (none for a flat API without `SDK_KEY`). */
  sdkKey?: string
  /** Defaults to Node's global `fetch`. */
  fetch?: typeof fetch
  /** Reconnect backoff; default 1 s doubling to 30 s, +0–30 % jitter. A longer `retry:` or Retry-After wins. */
  reconnect?: Partial<RetryPolicy>
  /** For servers that do not mark the end of their bootstrap: the quiet time that ends it, ms (default 100). */
  bootstrapIdleMs?: number
  /** A stream silent for this long counts as dropped (the servers send a keep-alive every 15 s), ms; default 45 000. */
  idleTimeoutMs?: number
  /**
   * Reports each evaluation as an impression to the flag service (`POST /api/environments/<id>/impressions`),
   * batched in memory; off by default. Needs `sdkKey`; the flat API has no impression ingest.
   */
  impressions?: boolean | ServerImpressionOptions
}

/** The reconnect backoff unless `reconnect` says otherwise. */
const DEFAULT_RECONNECT: Partial<RetryPolicy> = { maxMs: 30_000 }

/**
 * An OpenFeature server provider for Node: it follows the flag stream with a server SDK key, keeps the flag set in
 * memory and resolves every evaluation there with `evaluate` from `@flagsync/evaluation`, without a request. The
 * context's `targetingKey` is the bucketing `user_id`.
 *
 * `initialize()` resolves once the first complete flag set has arrived, and rejects with ProviderFatalError when the
 * stream refuses the key (401/403) before that. Once ready, PROVIDER_STALE goes out when the stream drops (flags
 * keep answering from memory), PROVIDER_READY when it is back, and PROVIDER_CONFIGURATION_CHANGED with
 * `flagsChanged` for each change.
 */
export class FlagsyncServerProvider implements Provider {
  /** How OpenFeature names this provider (in hooks, events and evaluation details). */
  readonly metadata = { name: 'flagsync-server' } as const
  readonly runsOn = 'server' as const
  readonly events = new OpenFeatureEventEmitter()
  #flags = new Map<string, EvaluableFlag>()
  readonly #stream: FlagStream
  #ready = false
  #stale = false
  #hasFlags = false
  #settle: ((error?: Error) => void) | undefined
  readonly #impressions: ImpressionReporter | undefined

  constructor(options: FlagsyncServerProviderOptions) {
    const reconnect = resolveRetryPolicy({ ...DEFAULT_RECONNECT, ...options.reconnect })
    if (typeof reconnect === 'string') throw new TypeError(`options.reconnect.${reconnect.slice(6)}`)
    if (!URL.canParse(options.streamUrl))
      throw new TypeError(`options.streamUrl must be a URL (got ${options.streamUrl})`)
    const fetchImpl = options.fetch ?? ((input, init) => fetch(input, init))
    this.#impressions = impressionReporter(options, fetchImpl)
    this.#stream = new FlagStream(
      {
        url: options.streamUrl,
        sdkKey: options.sdkKey,
        fetch: fetchImpl,
        reconnect,
        random: Math.random,
        bootstrapIdleMs: options.bootstrapIdleMs ?? 100,
        // setTimeout fires at once for a delay past 2^31 - 1 ms.
        idleTimeoutMs: Math.min(options.idleTimeoutMs ?? 45_000, 2 ** 31 - 1),
      },
      {
        current: () => this.#flags,
        environment: (id) => this.#impressions?.environment(id),
        replaceAll: (flags) => this.#replaceAll(flags),
        upsert: (flag) => this.#changed([flag.key], () => this.#flags.set(flag.key, flag)),
        remove: (key) => this.#changed(this.#flags.has(key) ? [key] : [], () => this.#flags.delete(key)),
        state: (state, error) => this.#onState(state, error),
      },
    )
  }

  initialize(): Promise<void> {
    const settled = new Promise<void>((resolve, reject) => {
      this.#settle = (error) => (error ? reject(error) : resolve())
    })
    this.#impressions?.open()
    this.#stream.start()
    return settled.then(() => {
      this.#ready = true
    })
  }

  /** Closes the stream and delivers the impressions still queued (one attempt). */
  async onClose(): Promise<void> {
    this.#stream.close()
    this.#ready = false
    this.#stale = false
    await this.#impressions?.close()
  }

  /** The impression reporter's counters; `enabled: false` without the `impressions` option. */
  impressionStatus(): ServerImpressionStatus {
    return (
      this.#impressions?.status() ?? {
        enabled: false,
        queued: 0,
        delivered: 0,
        dropped: 0,
        failures: 0,
        lastError: null,
      }
    )
  }

  resolveBooleanEvaluation(flagKey: string, defaultValue: boolean, context: EvaluationContext) {
    return this.#resolve(flagKey, defaultValue, context, 'boolean')
  }

  resolveStringEvaluation(flagKey: string, defaultValue: string, context: EvaluationContext) {
    return this.#resolve(flagKey, defaultValue, context, 'string')
  }

  resolveNumberEvaluation(flagKey: string, defaultValue: number, context: EvaluationContext) {
    return this.#resolve(flagKey, defaultValue, context, 'number')
  }

  resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext) {
    return this.#resolve(flagKey, defaultValue, context, 'object')
  }

  async #resolve<T>(flagKey: string, defaultValue: T, context: EvaluationContext, kind: ResolutionKind) {
    const flags = this.#flags
    const flag = flags.get(flagKey)
    const attributes = fromOpenFeatureContext(context)
    const found = flag && { flag, result: evaluate(flag, attributes, (key) => flags.get(key)) }
    // Resolution's error codes are the strings of OpenFeature's ErrorCode.
    const resolution = toResolution(flagKey, defaultValue, kind, found) as ResolutionDetails<T>
    // An impression for each evaluation of a flag that exists and answered its own value, as the browser records.
    if (this.#impressions && found && resolution.errorCode === undefined) {
      this.#impressions.record(flagKey, attributes.user_id, resolution.value, attributes)
    }
    return resolution
  }

  #replaceAll(flags: Map<string, EvaluableFlag>): void {
    const changed: string[] = []
    for (const [key, flag] of flags) {
      const before = this.#flags.get(key)
      if (!before || JSON.stringify(before) !== JSON.stringify(flag)) changed.push(key)
    }
    for (const key of this.#flags.keys()) if (!flags.has(key)) changed.push(key)
    this.#hasFlags = true
    this.#changed(changed, () => {
      this.#flags = flags
    })
  }

  /** Applies a change and, once the SDK reports this provider ready, announces the keys it touched. */
  #changed(keys: string[], apply: () => void): void {
    apply()
    if (this.#ready && keys.length > 0) {
      this.events.emit(ProviderEvents.ConfigurationChanged, { flagsChanged: keys.sort() })
    }
  }

  #onState(state: 'live' | 'down', error: Error | null): void {
    if (state === 'live') {
      this.#settle?.()
      this.#settle = undefined
      if (this.#ready && this.#stale) {
        this.#stale = false
        this.events.emit(ProviderEvents.Ready, { message: 'flag stream live again' })
      }
      return
    }
    const status = error instanceof StreamHttpError ? error.status : 0
    if (!this.#hasFlags && (status === 401 || status === 403)) {
      // A wrong key is configuration: `setProviderAndWait` must fail, not wait for it forever.
      this.#stream.close()
      this.#settle?.(new ProviderFatalError(`the flag stream refused the SDK key: ${error?.message}`))
      this.#settle = undefined
      return
    }
    if (!this.#stale && (this.#ready || this.#settle === undefined)) {
      this.#stale = true
      // Right after `initialize()` resolved the SDK has yet to mark the provider READY: STALE goes out after that.
      setTimeout(() => this.events.emit(ProviderEvents.Stale, { message: `flag stream down: ${error?.message}` }))
    }
  }
}

function impressionReporter(
  options: FlagsyncServerProviderOptions,
  fetchImpl: typeof fetch,
): ImpressionReporter | undefined {
  if (!options.impressions) return undefined
  if (!options.sdkKey) {
    throw new TypeError('options.impressions needs options.sdkKey: the flag service takes impressions with the SDK key')
  }
  return new ImpressionReporter({
    options: options.impressions === true ? {} : options.impressions,
    sdkKey: options.sdkKey,
    fetch: fetchImpl,
    streamUrl: options.streamUrl,
  })
}
