import type { EvaluableFlag } from '@flagsync/protocol'
import { type CheckedFlag, checkFlag } from './check-flag.js'
import { decideChecked } from './decide.js'
import type { Decision } from './decision.js'
import { ofrepAnswer, ofrepBulk, ofrepEvaluate } from './ofrep.js'
import { totalWeight } from './pick-variant.js'
import { present } from './present.js'
import type { EvaluationContext, GetFlag } from './types.js'

/**
 * One flag of a prepared set: either its answer's JSON, the same for every
 * context, or the checked flag with the JSON of each decision it has served so
 * far (a flag has few decisions: off, each rule, inside/outside, each variant).
 * Each JSON starts with what precedes it in the array (`[` for the first flag,
 * `,` for the others), so a body is one piece per flag.
 */
type PreparedFlag =
  | { key: string; json: Uint8Array }
  | { key: string; prefix: string; flag: CheckedFlag; byDecision: Map<string, Uint8Array> }

/** A flag set made ready for bulk evaluation: see {@link prepareFlags}. */
export interface PreparedFlags {
  readonly entries: readonly PreparedFlag[]
  readonly getFlag: GetFlag
}

const prepared = new WeakMap<readonly EvaluableFlag[], PreparedFlags>()
const utf8 = new TextEncoder()
const EMPTY = utf8.encode('[]')
const CLOSE = utf8.encode(']')

/**
 * A flag set ready for {@link ofrepBulkParts}, built once per array (servers
 * hand out the same array until the set changes): each flag's shape checked
 * once, and the answer of each flag that cannot depend on the context (off,
 * malformed, or on with nothing to target) serialized once.
 * @example
 * const ready = prepareFlags(flags) // the same object for the same array
 */
export function prepareFlags(flags: readonly EvaluableFlag[]): PreparedFlags {
  const known = prepared.get(flags)
  if (known) return known
  const byKey = new Map<string, EvaluableFlag>()
  for (const flag of flags) if (typeof flag?.key === 'string') byKey.set(flag.key, flag)
  const getFlag: GetFlag = (key) => byKey.get(key)
  const entries: PreparedFlag[] = []
  for (const [key, flag] of byKey) {
    const prefix = entries.length === 0 ? '[' : ','
    if (dependsOnContext(flag)) entries.push({ key, prefix, flag: flag as CheckedFlag, byDecision: new Map() })
    else entries.push({ key, json: utf8.encode(prefix + JSON.stringify(ofrepEvaluate(flag, key, {}, getFlag).body)) })
  }
  const ready: PreparedFlags = { entries, getFlag }
  prepared.set(flags, ready)
  return ready
}

/**
 * The bulk answer's `flags` as UTF-8 JSON in pieces: concatenated, exactly the bytes of
 * `JSON.stringify(ofrepBulk(flags, context))`. The pieces are the prepared set's cached answers
 * and those of the decisions the context-dependent flags reach; a server writes them without
 * building (and encoding) one big string per request.
 * @example
 * const body = Buffer.concat(ofrepBulkParts(flags, { user_id: 'u-1' }))
 */
export function ofrepBulkParts(flags: readonly EvaluableFlag[], context: EvaluationContext): Uint8Array[] {
  // evaluate() refuses a context that is not an object (INVALID_CONTEXT for every flag): the plain path says so.
  if (typeof context !== 'object' || context === null) return [utf8.encode(JSON.stringify(ofrepBulk(flags, context)))]
  const { entries, getFlag } = prepareFlags(flags)
  if (entries.length === 0) return [EMPTY]
  const parts = new Array<Uint8Array>(entries.length + 1)
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as PreparedFlag
    parts[i] = 'json' in entry ? entry.json : contextJson(entry, context, getFlag)
  }
  parts[entries.length] = CLOSE
  return parts
}

/** One context-dependent flag's answer: its decision, then the JSON cached for that decision. */
function contextJson(
  entry: { key: string; prefix: string; flag: CheckedFlag; byDecision: Map<string, Uint8Array> },
  context: EvaluationContext,
  getFlag: GetFlag,
): Uint8Array {
  let decision: Decision
  try {
    decision = decideChecked(entry.flag, context, getFlag)
  } catch {
    // A missing user id, a prerequisite cycle, anything unexpected: the plain path's answer, not cached.
    const outcome = ofrepEvaluate(entry.flag as unknown as EvaluableFlag, entry.key, context, getFlag)
    return utf8.encode(entry.prefix + JSON.stringify(outcome.body))
  }
  const id = 'index' in decision ? `${decision.kind}${decision.index}` : decision.kind
  let json = entry.byDecision.get(id)
  if (json === undefined) {
    const flag = entry.flag as unknown as EvaluableFlag
    json = utf8.encode(entry.prefix + JSON.stringify(ofrepAnswer(flag, entry.key, present(entry.flag, decision)).body))
    entry.byDecision.set(id, json)
  }
  return json
}

/**
 * Whether a flag's answer can differ between contexts. Not for a malformed flag
 * (PARSE_ERROR for all), one switched off, or one with no prerequisites and no
 * rules whose rollout is 0 % (outside for all) or 100 % without a weighted split.
 */
function dependsOnContext(flag: EvaluableFlag): boolean {
  try {
    checkFlag(flag)
  } catch {
    return false
  }
  if (!flag.is_enabled) return false
  if ((flag.prerequisites?.length ?? 0) > 0 || (flag.rules?.length ?? 0) > 0) return true
  const rollout = flag.rollout_percentage ?? 100
  if (rollout === 0) return false
  return rollout !== 100 || (flag.variants != null && totalWeight(flag.variants) > 0)
}
