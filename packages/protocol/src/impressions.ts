/**
 * One impression as the flag service's ingest (`POST /api/environments/:env_id/impressions`, a JSON array of these)
 * takes it, and the helpers every reporter uses to build one the service never refuses: the browser flag client's and
 * the server provider's. The service validates it with its own zod schema (`impressionInputSchema`, whose input type
 * is this one).
 */
export interface ImpressionWire {
  flag_key: string
  /** The evaluated user (the context's `user_id`, OpenFeature's `targetingKey`); null for an anonymous one. */
  user_id?: string | null
  /** The evaluated value as text: booleans and numbers as written, objects as JSON. */
  value: string
  /** The evaluation context, or null. */
  context?: Record<string, unknown> | null
  /** ISO 8601 with a time zone; omitted or null: when the service received the batch. */
  evaluated_at?: string | null
}

/** The service's limits: a reporter never sends what would be refused. */
export const IMPRESSION_WIRE_LIMITS = { batch: 500, valueLength: 512, userIdLength: 256, contextLength: 4096 } as const

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
// What a value cannot carry to the service (a 422 there, which would drop the whole batch): unpaired surrogates, and
// NUL, which PostgreSQL text cannot store; each is sent as U+FFFD.
const UNSENDABLE = new RegExp(`${LONE_SURROGATE.source}|\\0`, 'g')

/**
 * The user as the service takes it (a string or number `user_id` of the
 * context); null (anonymous) for anything it would refuse, so one odd id
 * never costs the whole batch.
 */
export function wireUserId(userId: unknown): string | null {
  const text = typeof userId === 'number' && Number.isFinite(userId) ? String(userId) : userId
  if (typeof text !== 'string' || text.length === 0 || text.length > IMPRESSION_WIRE_LIMITS.userIdLength) return null
  return CONTROL.test(text) || LONE_SURROGATE.test(text) ? null : text
}

/**
 * The evaluated value as the service stores it: booleans and numbers as
 * text, objects as JSON, unpaired surrogates as U+FFFD, at most 512 code units.
 */
export function wireValue(value: unknown): string | undefined {
  let text: string | undefined
  if (typeof value === 'string') text = value
  else if (typeof value === 'boolean' || typeof value === 'number') text = String(value)
  else if (value !== undefined) {
    try {
      text = JSON.stringify(value)
    } catch {
      return undefined
    }
  }
  if (text === undefined) return undefined
  return truncate(text.replace(UNSENDABLE, '\uFFFD'), IMPRESSION_WIRE_LIMITS.valueLength)
}

/**
 * The context as JSON text: `null` when there is none (or it is empty), it
 * cannot be serialized, or it is longer than the service takes.
 */
export function wireContext(context: Record<string, unknown> | undefined): string {
  if (!context || Object.keys(context).length === 0) return 'null'
  try {
    const json = JSON.stringify(context)
    // A toJSON could turn it into something else than an object, which the service would refuse with the whole batch.
    if (typeof json !== 'string' || !json.startsWith('{') || json.length > IMPRESSION_WIRE_LIMITS.contextLength) {
      return 'null'
    }
    return json
  } catch {
    return 'null'
  }
}

/**
 * One impression as JSON text, serialized once when recorded: `user_id` and `value` made sendable, `context` already
 * JSON (from {@link wireContext}, or `'null'`). Undefined when the value cannot be sent.
 */
export function impressionJson(
  item: { flag_key: string; user_id: unknown; value: unknown; evaluated_at: string },
  contextJson: string,
): string | undefined {
  const value = wireValue(item.value)
  if (value === undefined) return undefined
  const head = JSON.stringify({
    flag_key: item.flag_key,
    user_id: wireUserId(item.user_id),
    value,
    evaluated_at: item.evaluated_at,
  } satisfies ImpressionWire)
  return `${head.slice(0, -1)},"context":${contextJson}}`
}

/** At most `max` UTF-16 code units, never cutting a surrogate pair in half. */
function truncate(text: string, max: number): string {
  if (text.length <= max) return text
  const last = text.charCodeAt(max - 1)
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max)
}
