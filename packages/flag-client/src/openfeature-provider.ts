import {
  type EvaluationContext,
  type JsonValue,
  OpenFeatureEventEmitter,
  type Provider,
  ProviderEvents,
  type ResolutionDetails,
} from '@openfeature/web-sdk'
import type { FlagClient } from './types.js'

type Kind = 'boolean' | 'string' | 'number' | 'object'

/**
 * An OpenFeature web provider over a flag client, so apps can use the standard
 * API: `OpenFeature.setProvider(new FlagsyncProvider(flags))`. The context's
 * `targetingKey` becomes the bucketing `user_id`. Values and reasons are the
 * evaluator's; a missing flag or a value of the wrong type yields the default
 * with reason ERROR and FLAG_NOT_FOUND or TYPE_MISMATCH.
 */
export class FlagsyncProvider implements Provider {
  readonly metadata = { name: 'flagsync' } as const
  readonly runsOn = 'client' as const
  readonly events = new OpenFeatureEventEmitter()
  private readonly client: FlagClient
  private unsubscribe: (() => void) | undefined

  constructor(client: FlagClient) {
    this.client = client
  }

  async initialize(): Promise<void> {
    this.unsubscribe = this.client.subscribe((event) => {
      if (event.type === 'flags') {
        this.events.emit(ProviderEvents.ConfigurationChanged, { flagsChanged: event.changedKeys })
      } else if (
        event.type === 'status' &&
        (event.status.state === 'reconnecting' || event.status.state === 'polling')
      ) {
        this.events.emit(ProviderEvents.Stale, { message: `flag stream ${event.status.state}` })
      }
    })
    await this.client.ready()
  }

  async onClose(): Promise<void> {
    this.unsubscribe?.()
  }

  resolveBooleanEvaluation(flagKey: string, defaultValue: boolean, context: EvaluationContext) {
    return this.resolve(flagKey, defaultValue, context, 'boolean')
  }

  resolveStringEvaluation(flagKey: string, defaultValue: string, context: EvaluationContext) {
    return this.resolve(flagKey, defaultValue, context, 'string')
  }

  resolveNumberEvaluation(flagKey: string, defaultValue: number, context: EvaluationContext) {
    return this.resolve(flagKey, defaultValue, context, 'number')
  }

  resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext) {
    return this.resolve(flagKey, defaultValue, context, 'object')
  }

  private resolve<T>(flagKey: string, defaultValue: T, context: EvaluationContext, kind: Kind): ResolutionDetails<T> {
    const result = this.client.evaluate(flagKey, toFlagContext(context))
    if (!result.flagFound) {
      return {
        value: defaultValue,
        reason: 'ERROR',
        errorCode: 'FLAG_NOT_FOUND' as never,
        errorMessage: `no flag ${flagKey}`,
      }
    }
    if (result.reason === 'ERROR') {
      return {
        value: defaultValue,
        reason: 'ERROR',
        errorCode: (result.errorCode ?? 'GENERAL') as never,
        errorMessage: result.errorMessage,
      }
    }
    if (result.value === undefined) return { value: defaultValue, reason: result.reason, variant: result.variant }
    if (!matchesKind(result.value, kind)) {
      return {
        value: defaultValue,
        reason: 'ERROR',
        errorCode: 'TYPE_MISMATCH' as never,
        errorMessage: `flag ${flagKey} is not a ${kind}`,
      }
    }
    return { value: result.value as T, reason: result.reason, variant: result.variant }
  }
}

function matchesKind(value: unknown, kind: Kind): boolean {
  if (kind === 'object') return typeof value === 'object' && value !== null
  return typeof value === kind
}

/** OpenFeature's `targetingKey` is our bucketing `user_id`; other attributes pass through flat. */
function toFlagContext(context: EvaluationContext): Record<string, unknown> {
  const { targetingKey, ...rest } = context
  return targetingKey === undefined ? rest : { ...rest, user_id: targetingKey }
}
