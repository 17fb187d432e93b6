import type {
  EvaluableFlag,
  OfrepErrorCode,
  OfrepEvaluationFailure,
  OfrepEvaluationSuccess,
  OfrepMetadata,
  OfrepReason,
} from '@flagsync/protocol'
import { evaluate } from './evaluate.js'
import { type HashPair, murmur3From, murmur3Prefix } from './murmur3.js'
import { fromOpenFeatureContext, variantName } from './resolution.js'
import type { EvaluationContext, EvaluationErrorCode, EvaluationResult, GetFlag } from './types.js'

/** A request's context read for evaluation, or why it cannot be (the 400 an OFREP route answers). */
export type OfrepRequestRead =
  | { ok: true; context: EvaluationContext }
  | { ok: false; errorCode: 'PARSE_ERROR' | 'INVALID_CONTEXT'; errorDetails: string }

/** One flag's OFREP answer: a success, or a failure with the HTTP status the single-flag route answers. */
export type OfrepOutcome =
  | { ok: true; body: OfrepEvaluationSuccess }
  | { ok: false; status: 400 | 404; body: OfrepEvaluationFailure }

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Reads an OFREP request body `{context: {targetingKey?, ...attributes}}`.
 * A body that is not a JSON object is a PARSE_ERROR; a context that is not an
 * object, or a `targetingKey` that is not a string, is INVALID_CONTEXT. An
 * absent context is the empty one. `targetingKey` becomes the bucketing
 * `user_id`, as in the OpenFeature providers. An attribute named `__proto__` is
 * left out, as the protocol's schema leaves it out.
 * @example
 * ofrepReadRequest({ context: { targetingKey: 'u-1', plan: 'pro' } }) // { ok: true, context: { plan: 'pro', user_id: 'u-1' } }
 */
export function ofrepReadRequest(body: unknown): OfrepRequestRead {
  if (!isObject(body)) return { ok: false, errorCode: 'PARSE_ERROR', errorDetails: 'the body must be a JSON object' }
  const context = body.context ?? {}
  if (!isObject(context)) {
    return { ok: false, errorCode: 'INVALID_CONTEXT', errorDetails: 'context must be an object of attributes' }
  }
  if (context.targetingKey !== undefined && typeof context.targetingKey !== 'string') {
    return { ok: false, errorCode: 'INVALID_CONTEXT', errorDetails: 'context.targetingKey must be a string' }
  }
  return {
    ok: true,
    context: fromOpenFeatureContext(Object.hasOwn(context, '__proto__') ? withoutProto(context) : context),
  }
}

/**
 * The context without an attribute named `__proto__` (JSON.parse makes it an own property), as the protocol's
 * `ofrepContextSchema` reads it: this hand check stands for that schema on the bulk route.
 */
function withoutProto(context: Record<string, unknown>): Record<string, unknown> {
  const { ['__proto__']: _dropped, ...rest } = context
  return rest
}

/** Evaluation errors that OFREP has no code for (a flag serving a value of the wrong type) are GENERAL. */
const ERROR_CODES: Record<EvaluationErrorCode, OfrepErrorCode> = {
  PARSE_ERROR: 'PARSE_ERROR',
  TARGETING_KEY_MISSING: 'TARGETING_KEY_MISSING',
  INVALID_CONTEXT: 'INVALID_CONTEXT',
  TYPE_MISMATCH: 'GENERAL',
  GENERAL: 'GENERAL',
}

/**
 * One flag for OFREP, from the shared `evaluate` (prerequisites through
 * `getFlag`): the reason as evaluation gives it, except that a flag whose
 * answer cannot depend on the context (switched on, no rules, no
 * prerequisites, no rollout, no split) answers STATIC rather than DEFAULT.
 * `variant` is the served variant's name (`variantName`: its `name`, else its
 * value as a string); a rule's or the default's value is named by its value
 * too, so every distinct value has a stable variant. `metadata.revision` is
 * the flag's revision when it carries one. Never throws.
 * @example
 * ofrepEvaluate(flag, { user_id: 'u-1' }, (key) => flags.get(key))
 */
export function ofrepEvaluate(
  flag: EvaluableFlag | undefined,
  key: string,
  context: EvaluationContext,
  getFlag?: GetFlag,
): OfrepOutcome {
  if (flag === undefined) {
    return { ok: false, status: 404, body: { key, errorCode: 'FLAG_NOT_FOUND', errorDetails: `no flag ${key}` } }
  }
  return ofrepAnswer(flag, key, evaluate(flag, context, getFlag))
}

/** The OFREP answer of one flag's evaluation result (what `ofrepEvaluate` answers once `evaluate` has run). */
export function ofrepAnswer(flag: EvaluableFlag, key: string, result: EvaluationResult): OfrepOutcome {
  const metadata = metadataOf(flag)
  if (result.reason === 'ERROR') {
    const errorCode = ERROR_CODES[result.errorCode ?? 'GENERAL'] ?? 'GENERAL'
    const errorDetails = result.errorMessage ?? errorCode
    return { ok: false, status: 400, body: { key, errorCode, errorDetails, ...metadata } }
  }
  const reason: OfrepReason = result.reason === 'DEFAULT' && isStatic(flag) ? 'STATIC' : result.reason
  const variant = variantName(flag, result.variant) ?? valueName(result.value)
  const body: OfrepEvaluationSuccess = { key, reason, ...metadata }
  if (result.value !== undefined) body.value = result.value
  if (variant !== undefined) body.variant = variant
  return { ok: true, body }
}

/**
 * Every flag of a set for one context, in the set's order: successes and
 * per-flag failures side by side, as the bulk route answers them.
 */
export function ofrepBulk(
  flags: readonly EvaluableFlag[],
  context: EvaluationContext,
): Array<OfrepEvaluationSuccess | OfrepEvaluationFailure> {
  const byKey = new Map<string, EvaluableFlag>()
  for (const flag of flags) if (typeof flag?.key === 'string') byKey.set(flag.key, flag)
  const getFlag: GetFlag = (key) => byKey.get(key)
  const out: Array<OfrepEvaluationSuccess | OfrepEvaluationFailure> = []
  for (const [key, flag] of byKey) out.push(ofrepEvaluate(flag, key, context, getFlag).body)
  return out
}

/**
 * The bulk answer's ETag: a strong tag over the flag set's version and the
 * context (attributes in key order, so `{a, b}` and `{b, a}` agree). Two
 * 32-bit murmur3 hashes: a collision needs the same 64 bits for a different
 * context at the same version, and costs one missed refresh, never a wrong value.
 * @example
 * ofrepEtag('42', { user_id: 'u-1' }) // '"42-1a2b3c4d5e6f7a8b"'
 */
export function ofrepEtag(version: string, context: EvaluationContext): string {
  // murmur3(text, 1) and murmur3(text, 2) in one pass over the text.
  const { a, b } = murmur3From(ETAG_SEEDS, canonicalJson(context), etagHashes)
  const hex = (n: number) => n.toString(16).padStart(8, '0')
  return `"${version.replace(/["\\]/g, '')}-${hex(a)}${hex(b)}"`
}

const ETAG_SEEDS = murmur3Prefix('', 1, 2)
const etagHashes: HashPair = { a: 0, b: 0 }

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (isObject(value)) {
    const keys = Object.keys(value).sort()
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

function metadataOf(flag: EvaluableFlag): { metadata?: OfrepMetadata } {
  const revision: unknown = (flag as { revision?: unknown }).revision
  return typeof revision === 'number' ? { metadata: { revision } } : {}
}

function valueName(value: unknown): string | undefined {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value)
  return undefined
}

/** Whether nothing in the flag can make its answer depend on the context. */
function isStatic(flag: EvaluableFlag): boolean {
  const f = flag as { rules?: unknown; prerequisites?: unknown; rollout_percentage?: unknown; variants?: unknown }
  const empty = (list: unknown) => !Array.isArray(list) || list.length === 0
  return (
    empty(f.rules) &&
    empty(f.prerequisites) &&
    (f.rollout_percentage == null || f.rollout_percentage === 100) &&
    empty(f.variants)
  )
}
