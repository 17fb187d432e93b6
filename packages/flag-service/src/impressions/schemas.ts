import type { ImpressionWire } from '@flagsync/protocol'
import { z } from 'zod'
import { IMPRESSION_LIMITS as L } from './tables.js'
import type { ImpressionRow } from './types.js'

// The wire forms of impressions. Objects are strict like every other body of the
// service: an unknown field is a 422 naming it.

const FLAG_KEY = /^[A-Za-z0-9_-]+$/
// As for the protocol's ids: drivers turn unpaired surrogates into U+FFFD (two user ids would become one).
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/

const flagKey = z
  .string()
  .min(1, 'must not be empty')
  .max(L.flagKeyLength, `must be at most ${L.flagKeyLength} characters`)
  .regex(FLAG_KEY, 'may contain only letters, digits, underscores and hyphens')

const userId = z
  .string()
  .min(1, 'must not be empty (send null for an anonymous user)')
  .max(L.userIdLength, `must be at most ${L.userIdLength} characters`)
  .refine(
    (s) => !CONTROL.test(s) && !LONE_SURROGATE.test(s),
    'must not contain control characters or unpaired surrogates',
  )

// A value may hold line breaks and other control characters (a string flag's value is any text), but not NUL:
// PostgreSQL text cannot store it, and SQLite must not keep what PostgreSQL refuses.
const value = z
  .string()
  .max(L.valueLength, `must be at most ${L.valueLength} characters`)
  .refine((s) => !LONE_SURROGATE.test(s), 'must not contain unpaired surrogates')
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL (U+0000)')

/** An ISO 8601 timestamp with a time zone, as epoch ms. */
const timestamp = z.iso
  .datetime({ offset: true, error: 'must be an ISO 8601 timestamp with a time zone, e.g. 2026-01-01T12:00:00Z' })
  .transform((text, ctx) => {
    const ms = Date.parse(text)
    if (!Number.isFinite(ms) || ms < 0) {
      ctx.addIssue({ code: 'custom', message: 'must be a timestamp from 1970 on' })
      return z.NEVER
    }
    return ms
  })

/** The context, serialized once here (it is stored as JSON text). */
const context = z
  .record(z.string(), z.unknown(), { error: 'must be an object or null' })
  .nullable()
  .transform((ctx, issue) => {
    if (ctx === null) return null
    const json = JSON.stringify(ctx)
    if (json.length > L.contextLength) {
      issue.addIssue({
        code: 'custom',
        message: `must be at most ${L.contextLength} characters as JSON (is ${json.length})`,
      })
      return z.NEVER
    }
    return json
  })

const impressionInputSchema = z.strictObject({
  flag_key: flagKey,
  user_id: userId.nullable().optional(),
  value,
  context: context.optional(),
  /** Omitted or null: the time the server received the batch. */
  evaluated_at: timestamp.nullable().optional(),
})

/** The protocol's `ImpressionWire` (what the reporters send) is exactly what this schema takes: a type error otherwise. */
type ImpressionWireMatches = [z.input<typeof impressionInputSchema>] extends [ImpressionWire]
  ? [ImpressionWire] extends [z.input<typeof impressionInputSchema>]
    ? true
    : never
  : never
true satisfies ImpressionWireMatches

/** The POST body once its length is known to be at most 500 (that check comes first: 413). */
export const impressionBatchSchema = z.array(impressionInputSchema, { error: 'must be an array of impressions' })

const ITEM_KEYS = new Set(['flag_key', 'user_id', 'value', 'context', 'evaluated_at'])

/** An object as JSON.parse makes it: Object.prototype, and no own key that zod's record treats apart. */
const isJsonObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' &&
  v !== null &&
  Object.getPrototypeOf(v) === Object.prototype &&
  !Object.hasOwn(v, '__proto__') &&
  !Object.hasOwn(v, 'constructor')

/**
 * The rows of a valid batch without zod: ingest's hot path (zod builds a copy
 * of every item and runs a pipeline per field, a large share of a request's
 * time at 500 items). It accepts exactly what `impressionBatchSchema` accepts
 * and returns what the route makes of its output (tested against it);
 * anything it does not accept, invalid or merely unusual, answers undefined,
 * and the route then runs the schema, which gives the same rows or the 422
 * naming each field.
 */
export function fastImpressionRows(body: unknown, receivedAt: number): ImpressionRow[] | undefined {
  if (!Array.isArray(body)) return undefined
  const rows: ImpressionRow[] = new Array(body.length)
  for (let i = 0; i < body.length; i++) {
    const item: unknown = body[i]
    if (!isJsonObject(item)) return undefined
    for (const key in item) if (!ITEM_KEYS.has(key)) return undefined
    const { flag_key, user_id, value, context, evaluated_at } = item
    if (typeof flag_key !== 'string' || flag_key.length > L.flagKeyLength || !FLAG_KEY.test(flag_key)) return undefined
    if (
      user_id !== undefined &&
      user_id !== null &&
      (typeof user_id !== 'string' ||
        user_id.length === 0 ||
        user_id.length > L.userIdLength ||
        CONTROL.test(user_id) ||
        LONE_SURROGATE.test(user_id))
    ) {
      return undefined
    }
    if (
      typeof value !== 'string' ||
      value.length > L.valueLength ||
      LONE_SURROGATE.test(value) ||
      value.includes('\u0000')
    ) {
      return undefined
    }
    let json: string | null = null
    if (context !== undefined && context !== null) {
      if (!isJsonObject(context)) return undefined
      json = JSON.stringify(context)
      if (json.length > L.contextLength) return undefined
    }
    let at = receivedAt
    if (evaluated_at !== undefined && evaluated_at !== null) {
      const parsed = timestamp.safeParse(evaluated_at)
      if (!parsed.success) return undefined
      at = parsed.data
    }
    rows[i] = {
      flag_key,
      user_id: (user_id as string | null | undefined) ?? null,
      value,
      context: json,
      evaluated_at: at,
    }
  }
  return rows
}

/** A non-negative integer in a query string. */
const queryInt = (min: number, max: number) =>
  z
    .string({ error: 'must be given once, as a whole number' })
    .regex(/^\d{1,16}$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(
      z
        .number()
        .min(min, `must be a whole number from ${min} to ${max}`)
        .max(max, `must be a whole number from ${min} to ${max}`),
    )

/** Query parameters of GET …/impressions (the flag service's endpoints). Unknown parameters are a 422, so a typo never widens a filter. */
export const listQuerySchema = z.strictObject({
  flag_key: flagKey.optional(),
  user_id: userId.optional(),
  value: value.optional(),
  since_id: queryInt(0, Number.MAX_SAFE_INTEGER).optional(),
  limit: queryInt(1, L.listMax).default(L.listDefault),
  offset: queryInt(0, Number.MAX_SAFE_INTEGER).default(0),
})

export type ListQuery = z.output<typeof listQuerySchema>

/**
 * Query parameters of GET …/impressions/stats. Either one pages the answer
 * (`{items, next_cursor}`); with neither it is the array. Unknown parameters
 * are a 422, as for the list.
 */
export const statsQuerySchema = z.strictObject({
  limit: queryInt(1, L.statsPageMax).optional(),
  /** The `next_cursor` of the page before: the last flag key it held. */
  cursor: flagKey.optional(),
})

/** A stats page's parameters once paging is asked for. */
export interface StatsQuery {
  limit: number
  cursor?: string | undefined
}
