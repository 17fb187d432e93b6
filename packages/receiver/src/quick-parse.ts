import { type Flag, flatOperatorSchema, LIMITS, type Operation, type TargetingRule } from '@flagsync/protocol'

/**
 * Hand-written checks for the common case, a well-formed operation or flag,
 * because zod costs several microseconds per operation: about 3 ms for a
 * 500-operation batch (each operation parsed as an operation, then as a
 * flag), against well under a millisecond here.
 *
 * The zod schemas stay the authority: each function here accepts only values
 * its schema accepts, and returns what the schema would (same fields, same
 * defaults, same key order, so the stored JSON is byte for byte the same).
 * Anything else, unusual or invalid, gets `undefined` and the caller runs the
 * schema, which decides and words every error. test/quick-parse.test.ts
 * holds the two together on valid, boundary and invalid inputs.
 */

type Data = Record<string, unknown>

/** A JSON object: arrays, class instances and `__proto__` keys (which zod drops) are left to the schema. */
function isData(value: unknown): value is Data {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.getPrototypeOf(value) === Object.prototype &&
    !Object.hasOwn(value, '__proto__')
  )
}

/** Printable ASCII: no control characters, no surrogates, so it passes the id schemas' character rule. */
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/

function isPlainId(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length <= max && PRINTABLE_ASCII.test(value)
}

/** `operationSchema` for the usual operation (ids in printable ASCII); the record or changes are not copied. */
export function quickOperation(raw: unknown): Operation | undefined {
  if (!isData(raw)) return undefined
  const { action, collection, recordId, baseRevision } = raw
  if (!isPlainId(collection, 128) || !isPlainId(recordId, 256)) return undefined
  let fields = Object.keys(raw).length
  // revisionSchema: a non-negative safe integer; the key is left out of the result when absent, as zod does.
  const based = baseRevision !== undefined
  if (based) {
    if (!(Number.isSafeInteger(baseRevision) && (baseRevision as number) >= 0)) return undefined
    fields--
  }
  const base = based ? { baseRevision: baseRevision as number } : {}
  if (action === 'delete') return fields === 3 ? { action, collection, recordId, ...base } : undefined
  if (fields !== 4) return undefined
  if (action === 'insert' && isData(raw.record)) return { action, collection, recordId, record: raw.record, ...base }
  if (action === 'update' && isData(raw.changes)) return { action, collection, recordId, changes: raw.changes, ...base }
  return undefined
}

const FLAG_FIELDS = new Set(['key', 'is_enabled', 'rollout_percentage', 'description', 'rules'])
const RULE_FIELDS = 3 // attribute, operator, values
// flagKeySchema: 1 to 100 characters of this alphabet.
const FLAG_KEY = /^[A-Za-z0-9_-]{1,100}$/
const OPERATORS = new Set<string>(flatOperatorSchema.options)

/**
 * `flagSchema` applied to `fields` with the key `key` (`fields.key`, when
 * present, must equal it): the flag with every default filled in, or
 * undefined to let the schema decide.
 */
export function quickFlag(fields: Data, key: string): Flag | undefined {
  for (const name in fields) if (!FLAG_FIELDS.has(name)) return undefined
  if ((fields.key !== undefined && fields.key !== key) || !FLAG_KEY.test(key)) return undefined
  const { is_enabled, rollout_percentage = null, description = null, rules = [] } = fields
  if (typeof is_enabled !== 'boolean') return undefined
  if (
    rollout_percentage !== null &&
    !(
      Number.isInteger(rollout_percentage) &&
      (rollout_percentage as number) >= 0 &&
      (rollout_percentage as number) <= 100
    )
  ) {
    return undefined
  }
  if (description !== null && !(typeof description === 'string' && description.length <= LIMITS.descriptionLength)) {
    return undefined
  }
  if (!Array.isArray(rules) || rules.length > LIMITS.rules) return undefined
  const parsedRules: TargetingRule[] = []
  for (const rule of rules) {
    const parsed = quickRule(rule)
    if (!parsed) return undefined
    parsedRules.push(parsed)
  }
  return {
    key,
    is_enabled,
    rollout_percentage: rollout_percentage as number | null,
    description,
    rules: parsedRules,
  }
}

function quickRule(rule: unknown): TargetingRule | undefined {
  if (!isData(rule) || Object.keys(rule).length !== RULE_FIELDS) return undefined
  const { attribute, operator, values } = rule
  if (typeof attribute !== 'string' || attribute.length < 1 || attribute.length > LIMITS.attributeLength) {
    return undefined
  }
  if (typeof operator !== 'string' || !OPERATORS.has(operator)) return undefined
  if (!Array.isArray(values) || values.length < 1 || values.length > LIMITS.ruleValues) return undefined
  for (const value of values) {
    if (typeof value !== 'string' || value.length > LIMITS.ruleValueLength) return undefined
  }
  // A new object in the schema's key order, whatever the sender's order.
  return { attribute, operator: operator as TargetingRule['operator'], values: values as string[] }
}

/**
 * `applyFlagPatch(existing, changes)` for valid changes: the merged flag, or
 * undefined to let it decide (and word the error).
 */
export function quickPatch(existing: Flag, changes: Data): Flag | undefined {
  if (changes.key !== undefined && changes.key !== existing.key) return undefined
  return quickFlag({ ...existing, ...changes }, existing.key)
}
