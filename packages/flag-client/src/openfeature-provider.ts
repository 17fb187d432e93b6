import { fromOpenFeatureContext, type ResolutionKind, toResolution } from '@flagsync/evaluation'
import type { EvaluableFlag } from '@flagsync/protocol'
import {
  type EvaluationContext,
  type JsonValue,
  OpenFeatureEventEmitter,
  type Provider,
  ProviderEvents,
  ProviderFatalError,
  type ResolutionDetails,
} from '@openfeature/web-sdk'
import type { RemoteFlagClient } from './remote/remote-types.js'
import type { FlagClient, FlagClientStatus } from './types.js'

/**
 * An OpenFeature web provider over a flag client, so apps can use the standard
 * API: `OpenFeature.setProvider(new FlagsyncProvider(flags))`. The context's
 * `targetingKey` becomes the bucketing `user_id`. Values and reasons are the
 * evaluator's; a missing flag or a value of the wrong type yields the default
 * with reason ERROR and FLAG_NOT_FOUND or TYPE_MISMATCH.
 *
 * Events follow the stream once the provider is ready: PROVIDER_STALE when
 * it drops (reconnecting, polling the snapshot, offline), PROVIDER_READY when
 * it is live again, and PROVIDER_CONFIGURATION_CHANGED for every flag change.
 * Until `initialize()` has resolved none is emitted: the flag set that makes
 * the client ready is what the SDK's READY announces, and handlers must not
 * see a change (or a STALE the SDK's READY would then overwrite) while the
 * SDK still reports NOT_READY.
 */
export class FlagsyncProvider implements Provider {
  /** How OpenFeature names this provider (in hooks, events and evaluation details). */
  readonly metadata = { name: 'flagsync' } as const
  readonly runsOn = 'client' as const
  readonly events = new OpenFeatureEventEmitter()
  readonly #client: FlagClient
  #unsubscribe: (() => void) | undefined
  /** Whether STALE was emitted and no READY since. */
  #stale = false
  /** `initialize()` has resolved: from now on the SDK reports READY (or STALE), so events may go out. */
  #ready = false

  constructor(client: FlagClient) {
    this.#client = client
  }

  /**
   * Ready once the client is. A context given to `OpenFeature.setContext()` before the provider was set arrives
   * here: a remote-evaluation client fetches that context's values first, as `onContextChange` does.
   */
  async initialize(context?: EvaluationContext): Promise<void> {
    const initial = context && Object.keys(context).length && this.onContextChange(context, context)
    this.#unsubscribe = this.#client.subscribe((event) => {
      if (!this.#ready) return
      if (event.type === 'flags') {
        this.events.emit(ProviderEvents.ConfigurationChanged, { flagsChanged: event.changedKeys })
      } else if (event.type === 'status') {
        this.#onStatus(event.status)
      }
    })
    await this.#readyOrRefused()
    await initial
    this.#ready = true
    // A client offline or reconnecting by now (a cached start) said so before this was ready. The SDK marks the
    // provider READY once this returns, so the STALE goes out after that.
    if (STALE_STATES.has(this.#client.status().state)) setTimeout(() => this.#onStatus(this.#client.status()))
  }

  /**
   * The client's `ready()`, or a ProviderFatalError as soon as the stream refuses the SDK key (401/403) before any
   * flag set arrived: a wrong key is configuration, and `setProviderAndWait` must not wait for it forever. The
   * OpenFeature client then answers every evaluation with its default and PROVIDER_FATAL.
   */
  #readyOrRefused(): Promise<void> {
    return new Promise((resolve, reject) => {
      const refused = (status: FlagClientStatus) => {
        const code = status.lastError?.status
        if (code !== 401 && code !== 403) return false
        reject(new ProviderFatalError(`the flag stream refused the SDK key: ${status.lastError?.message}`))
        return true
      }
      if (refused(this.#client.status())) return
      const off = this.#client.subscribe((event) => {
        if (event.type === 'status' && refused(event.status)) off()
      })
      this.#client.ready().then(
        () => {
          off()
          resolve()
        },
        (error: unknown) => {
          off()
          reject(error)
        },
      )
    })
  }

  /** One STALE per outage and one READY when the stream is back (the SDK's status stays STALE until then). */
  #onStatus(status: FlagClientStatus): void {
    if (status.state === 'live') {
      if (!this.#stale) return
      this.#stale = false
      this.events.emit(ProviderEvents.Ready, { message: 'flag stream live again' })
    } else if (STALE_STATES.has(status.state) && !this.#stale) {
      this.#stale = true
      const why = status.lastError ? `: ${status.lastError.message}` : ''
      this.events.emit(ProviderEvents.Stale, { message: `flag stream ${status.state}${why}` })
    }
  }

  /** A remote-evaluation client fetches the values of the new context; a rules-mode client evaluates any context. */
  onContextChange(_old: EvaluationContext, context: EvaluationContext): Promise<void> | undefined {
    return (this.#client as Partial<RemoteFlagClient>).setContext?.(fromOpenFeatureContext(context))
  }

  async onClose(): Promise<void> {
    this.#unsubscribe?.()
    this.#ready = false
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

  #resolve<T>(
    flagKey: string,
    defaultValue: T,
    context: EvaluationContext,
    kind: ResolutionKind,
  ): ResolutionDetails<T> {
    const result = this.#client.evaluate(flagKey, fromOpenFeatureContext(context))
    const flag = result.flagFound ? (this.#client.getFlag(flagKey) as EvaluableFlag | undefined) : undefined
    // Resolution's error codes are the strings of OpenFeature's ErrorCode.
    return toResolution(flagKey, defaultValue, kind, flag && { flag, result }) as ResolutionDetails<T>
  }
}

const STALE_STATES = new Set<FlagClientStatus['state']>(['reconnecting', 'polling', 'offline'])
