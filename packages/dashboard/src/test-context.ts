import { describeCondition } from '@flagsync/evaluation'

/** The attribute types a row of the context editor offers. */
export type AttributeType = 'string' | 'number' | 'boolean'

/** One attribute of a test context as the editor shows it: the value as typed. */
export interface ContextRow {
  name: string
  type: AttributeType
  value: string
}

/** A context as `POST /api/environments/:env_id/evaluate` takes it: flat attributes. */
export type TestContext = Record<string, unknown>

/** The bucketing id of rollouts and variant splits: the first row, always there. */
export const USER_ID = 'user_id'

/** One flag's answer of the evaluate route. */
export interface Evaluated {
  key: string
  value: unknown
  variant: string | null
  reason: string
  rule_index?: number
  /** The deciding condition; `index` is its rule's place in the flag as the editor numbers them, a segment's rule one. */
  rule?: { attribute: string; operator: string; values: string[]; index?: number; segment_key?: string }
  bucket?: number
  error?: string
}

/** What of a flag the decision's words need: its switch, rollout and variants. */
export interface DecidingFlag {
  is_enabled: boolean
  rollout_percentage?: number | null
  variants?: ReadonlyArray<{ value: unknown; weight: number }>
}

/** The rows' context, or what is wrong with a row (its index) so the editor can say it next to the field. */
export function contextOfRows(rows: readonly ContextRow[]): { context: TestContext } | { error: string; row: number } {
  const context: TestContext = {}
  for (const [i, row] of rows.entries()) {
    const name = row.name.trim()
    if (name === '') {
      if (row.value === '') continue // an empty row is not an attribute yet
      return { error: 'needs a name', row: i }
    }
    if (name in context) return { error: `${name} is listed twice`, row: i }
    if (row.type === 'number') {
      const n = Number(row.value)
      if (row.value.trim() === '' || !Number.isFinite(n)) return { error: `${name} must be a number`, row: i }
      context[name] = n
    } else if (row.type === 'boolean') context[name] = row.value === 'true'
    else if (name !== USER_ID || row.value !== '') context[name] = row.value
  }
  return { context }
}

/** A context as rows: `user_id` first (empty when absent), then the other attributes; other JSON as its text. */
export function rowsOfContext(context: TestContext): ContextRow[] {
  const rows: ContextRow[] = [rowOf(USER_ID, context[USER_ID] ?? '')]
  for (const [name, value] of Object.entries(context)) if (name !== USER_ID) rows.push(rowOf(name, value))
  return rows
}

function rowOf(name: string, value: unknown): ContextRow {
  if (typeof value === 'number') return { name, type: 'number', value: String(value) }
  if (typeof value === 'boolean') return { name, type: 'boolean', value: String(value) }
  return { name, type: 'string', value: typeof value === 'string' ? value : JSON.stringify(value) }
}

/** Whether the rows can say this context exactly (flat strings, numbers, booleans), or only the JSON mode can. */
export function fitsRows(context: TestContext): boolean {
  return Object.values(context).every((v) => ['string', 'number', 'boolean'].includes(typeof v))
}

/** JSON text as a context: an object, or what is wrong with it. */
export function contextOfJson(text: string): { context: TestContext } | { error: string } {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (e) {
    return { error: `not JSON: ${e instanceof Error ? e.message : String(e)}` }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return { error: 'must be a JSON object of attributes' }
  return { context: parsed as TestContext }
}

const storageKey = (envId: string) => `flagsync.dashboard.test-context.${envId}`

/** The test context last used in an environment (kept in `storage`, so it survives a reload), or null. */
export function loadTestContext(
  envId: string,
  storage: Storage | undefined = globalThis.localStorage,
): TestContext | null {
  try {
    const parsed = contextOfJson(storage?.getItem(storageKey(envId)) ?? '')
    return 'context' in parsed ? parsed.context : null
  } catch {
    return null // storage refused (private mode, quota): start empty
  }
}

export function saveTestContext(
  envId: string,
  context: TestContext,
  storage: Storage | undefined = globalThis.localStorage,
): void {
  try {
    storage?.setItem(storageKey(envId), JSON.stringify(context))
  } catch {
    // A context that cannot be kept is still used for this visit.
  }
}

/**
 * What decided an answer, in words: the rule and its condition, the rollout
 * bucket against the rollout, the variant, or why the flag served its off value.
 *
 * @example
 * decisionText({ key: 'theme', value: 'dark', variant: null, reason: 'TARGETING_MATCH', rule_index: 0,
 *   rule: { attribute: 'country', operator: 'equals', values: ['NL'] } }) // 'rule 1: country is NL'
 */
export function decisionText(entry: Evaluated, flag?: DecidingFlag): string {
  switch (entry.reason) {
    case 'TARGETING_MATCH': {
      const { rule } = entry
      const n = (rule?.index ?? entry.rule_index ?? 0) + 1
      if (!rule) return `rule ${n}`
      const segment = rule.segment_key === undefined ? '' : ` (segment \`${rule.segment_key}\`)`
      return `rule ${n}${segment}: ${describeCondition(rule)}`
    }
    case 'SPLIT':
      return splitText(entry, flag)
    case 'DEFAULT':
      return 'no rule matched and no rollout: the default'
    case 'DISABLED':
      return flag?.is_enabled ? 'a prerequisite is not met: its off value' : 'the flag is off'
    default:
      return errorWords(entry.error)
  }
}

function splitText(entry: Evaluated, flag: DecidingFlag | undefined): string {
  const rollout = flag?.rollout_percentage ?? 100
  const bucket = entry.bucket
  const where = bucket === undefined ? '' : `bucket ${bucket} of 100 → `
  const inside = bucket === undefined || bucket < rollout
  const share = rollout >= 100 ? 'everyone' : `the ${rollout} % rollout`
  if (!inside) return `${where}outside ${share}: its off value`
  if (entry.variant === null) return `${where}${rollout >= 100 ? 'everyone' : `inside the ${rollout} % rollout`}`
  const variants = flag?.variants ?? []
  const index = Number(entry.variant)
  const total = variants.reduce((sum, v) => sum + v.weight, 0)
  const weight = variants[index]?.weight
  const odds = weight !== undefined && total > 0 ? ` (${Math.round((weight / total) * 1000) / 10} % of ${share})` : ''
  // The variant is drawn by a second hash: the rollout bucket decides only whether the user is in the rollout.
  if (rollout >= 100) return `variant ${index + 1}${odds}`
  return `${where}inside the ${rollout} % rollout, variant ${index + 1}${odds}`
}

const ERROR_WORDS: Readonly<Record<string, string>> = {
  TARGETING_KEY_MISSING: `it splits users and the context has no ${USER_ID}`,
  FLAG_NOT_FOUND: 'no such flag in this environment',
  TYPE_MISMATCH: "a value does not fit the flag's type",
  PARSE_ERROR: 'the flag cannot be read',
  GENERAL: 'a prerequisite cannot be evaluated',
}

function errorWords(code: string | undefined): string {
  const words = code ? ERROR_WORDS[code] : undefined
  return `error${code ? ` ${code}` : ''}${words ? `: ${words}` : ''}; the app's fallback applies`
}
