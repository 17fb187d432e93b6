import type { EvaluableFlag } from '@flagsync/protocol'
import { type CheckedFlag, checkFlag } from './check-flag.js'
import { decideChecked } from './decide.js'
import type { Decision } from './decision.js'
import { ofrepAnswer, ofrepBulk, ofrepEvaluate } from './ofrep.js'
import { totalWeight } from './pick-variant.js'
import { present } from './present.js'
import type { EvaluationContext, GetFlag } from './types.js'

/**
 * One piece of a prepared set: the JSON of a run of consecutive flags whose answers are the same for every
 * context, or one context-dependent flag (`flag`) with the JSON of each decision it has served so far (a flag has
 * few decisions: off, each rule, inside/outside, each variant), by slot (see {@link slotOf}). Each JSON starts with
 * what precedes it in the array (`[` for the first flag, `,` for the others), so a body is the pieces in order. One
 * shape for every piece keeps the loop monomorphic.
 */
class PreparedFlag {
  readonly answers: Array<Uint8Array | undefined> = []
  constructor(
    readonly key: string,
    readonly prefix: string,
    readonly json: Uint8Array | undefined,
    readonly flag: CheckedFlag | undefined,
  ) {}
}

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
 * once, and the answers of flags that cannot depend on the context (off,
 * malformed, or on with nothing to target) serialized once, a run of them as one piece.
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
  let run = '' // the answers of consecutive flags that cannot depend on the context: one piece, copied once
  const endRun = () => {
    if (run !== '') entries.push(new PreparedFlag('', '', utf8.encode(run), undefined))
    run = ''
  }
  let count = 0
  for (const [key, flag] of byKey) {
    const prefix = count++ === 0 ? '[' : ','
    if (dependsOnContext(flag)) {
      endRun()
      entries.push(new PreparedFlag(key, prefix, undefined, flag as CheckedFlag))
    } else run += prefix + JSON.stringify(ofrepEvaluate(flag, key, {}, getFlag).body)
  }
  endRun()
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
  const count = fillPieces(flags, context)
  return pieces.slice(0, count)
}

/**
 * {@link ofrepBulkParts} between `head` and `tail`, copied into one array:
 * a server's whole answer body, with no array of pieces built per request.
 * @example
 * const body = ofrepBulkBody(flags, { user_id: 'u-1' }, utf8.encode('{"flags":'), utf8.encode('}'))
 */
export function ofrepBulkBody(
  flags: readonly EvaluableFlag[],
  context: EvaluationContext,
  head: Uint8Array,
  tail: Uint8Array,
): Uint8Array {
  const count = fillPieces(flags, context)
  let length = head.length + tail.length
  for (let i = 0; i < count; i++) length += (pieces[i] as Uint8Array).length
  const body = new Uint8Array(length)
  body.set(head, 0)
  let at = head.length
  for (let i = 0; i < count; i++) {
    const piece = pieces[i] as Uint8Array
    body.set(piece, at)
    at += piece.length
  }
  body.set(tail, at)
  return body
}

// The pieces of the answer being built, reused: read right after they are written (evaluation is synchronous).
const pieces: Uint8Array[] = []

/** Writes the answer's pieces to `pieces` and returns how many there are. */
function fillPieces(flags: readonly EvaluableFlag[], context: EvaluationContext): number {
  // evaluate() refuses a context that is not an object (INVALID_CONTEXT for every flag): the plain path says so.
  if (typeof context !== 'object' || context === null) {
    pieces[0] = utf8.encode(JSON.stringify(ofrepBulk(flags, context)))
    return 1
  }
  const { entries, getFlag } = prepareFlags(flags)
  if (entries.length === 0) {
    pieces[0] = EMPTY
    return 1
  }
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as PreparedFlag
    pieces[i] = entry.json ?? contextJson(entry, entry.flag as CheckedFlag, context, getFlag)
  }
  pieces[entries.length] = CLOSE
  return entries.length + 1
}

/** One context-dependent flag's answer: its decision, then the JSON cached for that decision. */
function contextJson(entry: PreparedFlag, flag: CheckedFlag, context: EvaluationContext, getFlag: GetFlag): Uint8Array {
  let decision: Decision
  try {
    decision = decideChecked(flag, context, getFlag)
  } catch {
    // A missing user id, a prerequisite cycle, anything unexpected: the plain path's answer, not cached.
    const outcome = ofrepEvaluate(flag as unknown as EvaluableFlag, entry.key, context, getFlag)
    return utf8.encode(entry.prefix + JSON.stringify(outcome.body))
  }
  const slot = slotOf(decision, flag)
  let json = entry.answers[slot]
  if (json === undefined) {
    const body = ofrepAnswer(flag as unknown as EvaluableFlag, entry.key, present(flag, decision)).body
    json = utf8.encode(entry.prefix + JSON.stringify(body))
    entry.answers[slot] = json
  }
  return json
}

/** A decision's slot among a flag's answers: the four without an index, then each rule, then each variant. */
function slotOf(decision: Decision, flag: CheckedFlag): number {
  switch (decision.kind) {
    case 'disabled':
      return 0
    case 'outside':
      return 1
    case 'inside':
      return 2
    case 'default':
      return 3
    case 'rule':
      return 4 + decision.index
    case 'variant':
      return 4 + (flag.rules?.length ?? 0) + decision.index
  }
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
