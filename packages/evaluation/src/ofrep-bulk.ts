import type { EvaluableFlag } from '@flagsync/protocol'
import { type CheckedFlag, checkFlag } from './check-flag.js'
import { CompiledFlags, decisionOf } from './compile-flag.js'
import { ofrepAnswer, ofrepBulk, ofrepEvaluate } from './ofrep.js'
import { totalWeight } from './pick-variant.js'
import { present } from './present.js'
import type { EvaluationContext, GetFlag } from './types.js'

/**
 * One piece of a prepared set: the JSON of a run of consecutive flags whose answers are the same for every
 * context, or one context-dependent flag (`flag`, number `index` of the compiled flags) with the JSON of each decision it has
 * served so far (a flag has few decisions: off, each rule, inside/outside, each variant), by slot (`slotOf`
 * in compile-flag.ts). Each JSON starts with what precedes it in the array (`[` for the first flag, `,` for the
 * others), so a body is the pieces in order. One shape for every piece keeps the loop monomorphic.
 */
class PreparedFlag {
  readonly answers: Array<string | undefined> = []
  /** The UTF-8 bytes of `answers`, by slot, for {@link ofrepBulkWrite}. */
  readonly answerBytes: Array<Uint8Array | undefined> = []
  /** The UTF-8 bytes of `json`. */
  readonly bytes: Uint8Array | undefined
  constructor(
    readonly key: string,
    readonly prefix: string,
    readonly json: string | undefined,
    readonly flag: CheckedFlag | undefined,
    readonly index: number,
  ) {
    this.bytes = json === undefined ? undefined : utf8.encode(json)
  }
}

/** A flag set made ready for bulk evaluation: see {@link prepareFlags}. */
export interface PreparedFlags {
  readonly entries: readonly PreparedFlag[]
  readonly getFlag: GetFlag
  /** The context-dependent flags, compiled: `begin(context)` before asking their slots. */
  readonly compiled: CompiledFlags
  /** Whether every answer cached so far is ASCII (then a body's Latin-1 bytes are its UTF-8 bytes). */
  ascii: boolean
}

/** A bulk answer's `flags` JSON: see {@link ofrepBulkJson}. */
export interface OfrepBulkJson {
  text: string
  /** The text is ASCII: a server may encode it as Latin-1, a plain copy, rather than as UTF-8. */
  ascii: boolean
}

const prepared = new WeakMap<readonly EvaluableFlag[], PreparedFlags>()
const utf8 = new TextEncoder()
const NOT_ASCII = /[\u0080-\uffff]/

/**
 * A flag set ready for {@link ofrepBulkJson}, built once per array (servers
 * hand out the same array until the set changes): each flag's shape checked
 * once, the context-dependent flags compiled once (`CompiledFlags`), and the
 * answers of flags that cannot depend on the context (off, malformed, or on
 * with nothing to target) serialized once, a run of them as one piece.
 * @example
 * const ready = prepareFlags(flags) // the same object for the same array
 */
export function prepareFlags(flags: readonly EvaluableFlag[]): PreparedFlags {
  const known = prepared.get(flags)
  if (known) return known
  const byKey = new Map<string, EvaluableFlag>()
  for (const flag of flags) if (typeof flag?.key === 'string') byKey.set(flag.key, flag)
  const getFlag: GetFlag = (key) => byKey.get(key)
  const dependent: CheckedFlag[] = []
  const entries: PreparedFlag[] = []
  let run = '' // the answers of consecutive flags that cannot depend on the context: one piece
  const endRun = () => {
    if (run !== '') entries.push(new PreparedFlag('', '', run, undefined, -1))
    run = ''
  }
  let count = 0
  for (const [key, flag] of byKey) {
    const prefix = count++ === 0 ? '[' : ','
    if (dependsOnContext(flag)) {
      endRun()
      const checked = flag as CheckedFlag
      entries.push(new PreparedFlag(key, prefix, undefined, checked, dependent.push(checked) - 1))
    } else run += prefix + JSON.stringify(ofrepEvaluate(flag, key, {}, getFlag).body)
  }
  endRun()
  const ascii = entries.every((entry) => !NOT_ASCII.test(entry.json ?? ''))
  const ready: PreparedFlags = { entries, getFlag, compiled: new CompiledFlags(dependent, getFlag), ascii }
  prepared.set(flags, ready)
  return ready
}

/**
 * The bulk answer's `flags` as one JSON string, exactly `JSON.stringify(ofrepBulk(flags, context))`,
 * joined from the prepared set's cached answers and those of the decisions the context-dependent
 * flags reach, with whether it is ASCII (a server then writes its Latin-1 bytes, a plain copy).
 * @example
 * const { text, ascii } = ofrepBulkJson(flags, { user_id: 'u-1' })
 * const body = Buffer.from(`{"flags":${text}}`, ascii ? 'latin1' : 'utf8')
 */
export function ofrepBulkJson(flags: readonly EvaluableFlag[], context: EvaluationContext): OfrepBulkJson {
  // evaluate() refuses a context that is not an object (INVALID_CONTEXT for every flag): the plain path says so.
  if (typeof context !== 'object' || context === null) {
    const text = JSON.stringify(ofrepBulk(flags, context))
    return { text, ascii: !NOT_ASCII.test(text) }
  }
  const set = prepareFlags(flags)
  const { entries } = set
  if (entries.length === 0) return { text: '[]', ascii: true }
  set.compiled.begin(context)
  let text = ''
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as PreparedFlag
    if (entry.json !== undefined) text += entry.json
    else {
      const slot = contextSlot(set, entry)
      text += slot < 0 ? uncachedJson(set, entry, context) : slotJson(set, entry, slot)
    }
  }
  return { text: `${text}]`, ascii: set.ascii }
}

const CLOSE = 0x5d // ]

/**
 * {@link ofrepBulkJson}'s UTF-8 bytes written into `target` from `offset`, copied from bytes cached per answer
 * (no string is built): the offset after them, or -1 when they do not fit in `target`.
 * @example
 * const end = ofrepBulkWrite(flags, { user_id: 'u-1' }, memory, 0)
 * if (end >= 0) res.end(memory.subarray(0, end))
 */
export function ofrepBulkWrite(
  flags: readonly EvaluableFlag[],
  context: EvaluationContext,
  target: Uint8Array,
  offset: number,
): number {
  if (typeof context !== 'object' || context === null)
    return encodeInto(ofrepBulkJson(flags, context).text, target, offset)
  const set = prepareFlags(flags)
  const { entries } = set
  if (entries.length === 0) return encodeInto('[]', target, offset)
  set.compiled.begin(context)
  let at = offset
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as PreparedFlag
    let bytes = entry.bytes
    if (bytes === undefined) {
      const slot = contextSlot(set, entry)
      bytes = slot < 0 ? utf8.encode(uncachedJson(set, entry, context)) : slotBytes(set, entry, slot)
    }
    if (at + bytes.length >= target.length) return -1 // one more byte for the closing bracket
    target.set(bytes, at)
    at += bytes.length
  }
  target[at] = CLOSE
  return at + 1
}

/** `text`'s UTF-8 bytes into `target` at `offset`: the offset after them, or -1 when they do not all fit. */
function encodeInto(text: string, target: Uint8Array, offset: number): number {
  const { read, written } = utf8.encodeInto(text, target.subarray(offset))
  return read === text.length ? offset + written : -1
}

/**
 * The bulk answer's `flags` as UTF-8 JSON: the bytes of {@link ofrepBulkJson}'s text.
 * @example
 * const body = Buffer.concat(ofrepBulkParts(flags, { user_id: 'u-1' }))
 */
export function ofrepBulkParts(flags: readonly EvaluableFlag[], context: EvaluationContext): Uint8Array[] {
  return [utf8.encode(ofrepBulkJson(flags, context).text)]
}

/**
 * {@link ofrepBulkJson}'s bytes between `head` and `tail`, in one array: a server's whole answer body.
 * @example
 * const body = ofrepBulkBody(flags, { user_id: 'u-1' }, utf8.encode('{"flags":'), utf8.encode('}'))
 */
export function ofrepBulkBody(
  flags: readonly EvaluableFlag[],
  context: EvaluationContext,
  head: Uint8Array,
  tail: Uint8Array,
): Uint8Array {
  const { text } = ofrepBulkJson(flags, context)
  const body = new Uint8Array(head.length + text.length * 3 + tail.length)
  body.set(head, 0)
  const at = head.length + utf8.encodeInto(text, body.subarray(head.length)).written
  body.set(tail, at)
  return body.subarray(0, at + tail.length)
}

/**
 * A context-dependent flag's decision for the context the set began, as a slot; -1 when deciding it threw
 * (a missing user id, a prerequisite cycle, anything unexpected): then its answer is the plain path's.
 */
function contextSlot(set: PreparedFlags, entry: PreparedFlag): number {
  try {
    return set.compiled.slot(entry.index)
  } catch {
    return -1
  }
}

/** The plain path's answer of a flag whose decision threw, not cached. */
function uncachedJson(set: PreparedFlags, entry: PreparedFlag, context: EvaluationContext): string {
  const outcome = ofrepEvaluate(entry.flag as unknown as EvaluableFlag, entry.key, context, set.getFlag)
  const json = entry.prefix + JSON.stringify(outcome.body)
  if (NOT_ASCII.test(json)) set.ascii = false
  return json
}

/** The JSON of a flag's answer for a slot, cached. */
function slotJson(set: PreparedFlags, entry: PreparedFlag, slot: number): string {
  let json = entry.answers[slot]
  if (json === undefined) {
    const flag = entry.flag as CheckedFlag
    const body = ofrepAnswer(flag as unknown as EvaluableFlag, entry.key, present(flag, decisionOf(slot, flag))).body
    json = entry.prefix + JSON.stringify(body)
    if (NOT_ASCII.test(json)) set.ascii = false
    entry.answers[slot] = json
  }
  return json
}

/** The UTF-8 bytes of {@link slotJson}, cached. */
function slotBytes(set: PreparedFlags, entry: PreparedFlag, slot: number): Uint8Array {
  let bytes = entry.answerBytes[slot]
  if (bytes === undefined) {
    bytes = utf8.encode(slotJson(set, entry, slot))
    entry.answerBytes[slot] = bytes
  }
  return bytes
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
