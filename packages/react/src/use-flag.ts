import type { FlagEvaluation } from '@flagsync/flag-client'
import { useMemo, useSyncExternalStore } from 'react'
import { useFlagsyncContext } from './context.js'
import type { FlagStore, FlagView } from './flag-store.js'

/** A flag value as an app reads it; the fallback's kind decides which values are accepted. */
export type FlagValue = boolean | string | number | readonly unknown[] | { readonly [key: string]: unknown }

/** The fallback's type, widened: `false` reads as `boolean`, `'a'` as `string`, `0` as `number`. */
export type FlagValueOf<T> = T extends boolean ? boolean : T extends string ? string : T extends number ? number : T

/** Evaluation attributes, e.g. `{ user_id: 'u-42', country: 'NL' }`. */
export type FlagContext = Record<string, unknown>

/** What `useFlagDetails` returns: the value with the evaluation's explanation. */
export interface FlagDetails<T> {
  /** The flag's value, or the fallback when the flag is missing, failed to evaluate or has another kind of value. */
  value: T
  /** False when the client has no flag of this key (yet: before the first flag set, every flag is missing). */
  flagFound: boolean
  /** The evaluator's reason; `ERROR` whenever the fallback was used because of `errorCode`. */
  reason: FlagEvaluation['reason']
  /** The weighted variant served, on a variant split. */
  variant?: string
  /** Why the fallback was used: the evaluator's code, `FLAG_NOT_FOUND`, or `TYPE_MISMATCH` (value of another kind). */
  errorCode?: FlagEvaluation['errorCode'] | 'TYPE_MISMATCH'
}

/**
 * The value of one flag for a context, re-rendering only when that value
 * changes (another flag's change or a new but equal context object does not).
 *
 * @example
 * const showCheckout = useFlag('new-checkout', false, { user_id: user.id }) // boolean
 * const banner = useFlag('banner-text', 'Welcome') // string
 */
export function useFlag<T extends FlagValue>(key: string, fallback: T, context?: FlagContext): FlagValueOf<T> {
  return useDetails('useFlag', key, fallback, context).value
}

/** `useFlag` with the evaluation's reason, variant and error code. */
export function useFlagDetails<T extends FlagValue>(
  key: string,
  fallback: T,
  context?: FlagContext,
): FlagDetails<FlagValueOf<T>> {
  return useDetails('useFlagDetails', key, fallback, context)
}

function useDetails<T extends FlagValue>(
  hook: string,
  key: string,
  fallback: T,
  context: FlagContext | undefined,
): FlagDetails<FlagValueOf<T>> {
  const { flags } = useFlagsyncContext(hook)
  // Inline objects are new on every render; their content decides whether anything changed.
  const contextKey = contentKey(context)
  const fallbackKey = typeof fallback === 'object' ? contentKey(fallback) : fallback
  // biome-ignore lint/correctness/useExhaustiveDependencies: context and fallback are keyed by content
  const selector = useMemo(() => selectDetails(flags, key, fallback, context), [flags, key, contextKey, fallbackKey])
  return useSyncExternalStore(flags.subscribe, selector.getSnapshot, selector.getServerSnapshot) as FlagDetails<
    FlagValueOf<T>
  >
}

/**
 * Snapshot functions over the store's views. Each view is evaluated once (so
 * React's repeated getSnapshot calls record one impression), and an evaluation
 * equal to the previous one returns the previous object, so React skips the
 * render.
 */
function selectDetails(flags: FlagStore, key: string, fallback: FlagValue, context: FlagContext | undefined) {
  // Shared by both readers, so hydration's switch from the server view to an equal client view renders nothing.
  let last: FlagDetails<unknown> | undefined
  const reader = (view: () => FlagView) => {
    let seen: FlagView | undefined
    let result: FlagDetails<unknown> | undefined
    return () => {
      const current = view()
      if (current === seen && result) return result
      seen = current
      const next = toDetails(flags.evaluate(current, key, context), fallback)
      result = last && sameDetails(last, next) ? last : next
      last = result
      return result
    }
  }
  return { getSnapshot: reader(flags.getSnapshot), getServerSnapshot: reader(flags.getServerSnapshot) }
}

function toDetails(result: FlagEvaluation, fallback: FlagValue): FlagDetails<unknown> {
  const base = { flagFound: result.flagFound, reason: result.reason }
  const variant = result.variant === undefined ? {} : { variant: result.variant }
  if (result.errorCode !== undefined) return { ...base, ...variant, value: fallback, errorCode: result.errorCode }
  if (result.value === undefined || result.value === null) return { ...base, ...variant, value: fallback }
  if (!sameKind(result.value, fallback)) {
    return { ...base, ...variant, value: fallback, reason: 'ERROR', errorCode: 'TYPE_MISMATCH' }
  }
  return { ...base, ...variant, value: result.value }
}

function sameKind(value: unknown, fallback: FlagValue): boolean {
  if (typeof fallback !== 'object') return typeof value === typeof fallback
  return typeof value === 'object' && value !== null && Array.isArray(value) === Array.isArray(fallback)
}

function sameDetails(a: FlagDetails<unknown>, b: FlagDetails<unknown>): boolean {
  return (
    a.flagFound === b.flagFound &&
    a.reason === b.reason &&
    a.variant === b.variant &&
    a.errorCode === b.errorCode &&
    (Object.is(a.value, b.value) || (typeof a.value === 'object' && contentKey(a.value) === contentKey(b.value)))
  )
}

const identities = new WeakMap<object, string>()
let nextIdentity = 0

/** JSON of a value, or (for one JSON cannot encode, e.g. a cycle) a key unique to that object. */
function contentKey(value: unknown): string {
  if (value === undefined) return ''
  try {
    return `j${JSON.stringify(value)}`
  } catch {
    const object = value as object
    let id = identities.get(object)
    if (id === undefined) {
      id = `o${nextIdentity++}`
      identities.set(object, id)
    }
    return id
  }
}
