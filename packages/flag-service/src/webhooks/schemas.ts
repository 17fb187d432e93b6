import { z } from 'zod'
import { iso, isoOrNull } from '../records.js'
import { isPlainText, PLAIN_TEXT_MESSAGE } from '../schemas.js'
import { type DeliveryRow, WEBHOOK_EVENT_TYPES, type WebhookRow } from './tables.js'

// The webhook routes' bodies and answers. Objects are strict: an unknown field is a 422 naming it.

export const WEBHOOK_LIMITS = { urlLength: 2048, descriptionLength: 500, pageSize: 50, maxPageSize: 200 } as const

/** An absolute http(s) URL without credentials (they would show in every list). */
const url = z
  .string()
  .trim()
  .max(WEBHOOK_LIMITS.urlLength, `must be at most ${WEBHOOK_LIMITS.urlLength} characters`)
  .refine(isPlainText, PLAIN_TEXT_MESSAGE)
  .refine((raw) => {
    try {
      const parsed = new URL(raw)
      return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== ''
    } catch {
      return false
    }
  }, 'must be an absolute http:// or https:// URL')
  .refine((raw) => {
    try {
      const parsed = new URL(raw)
      return parsed.username === '' && parsed.password === ''
    } catch {
      return true
    }
  }, 'must not contain a user name or password')

// zod runs a length check on any value with a length: on a string sent as `events` it would add "too big:
// expected string …" to "expected array". The list's checks run only on a list without issues.
const onList = { when: (payload: { issues: readonly unknown[] }) => payload.issues.length === 0 }

/** A non-empty list of event types, or `["*"]` for every type. */
const events = z
  .array(z.enum([...WEBHOOK_EVENT_TYPES, '*'], { error: `must be one of ${WEBHOOK_EVENT_TYPES.join(', ')} or *` }))
  .min(1, { error: 'must list at least one event type', ...onList })
  .max(WEBHOOK_EVENT_TYPES.length + 1, {
    error: `must list at most ${WEBHOOK_EVENT_TYPES.length + 1} types`,
    ...onList,
  })
  .refine((list) => !list.includes('*') || list.length === 1, {
    error: '"*" subscribes to every type: send it alone',
    ...onList,
  })
  .transform((list) => [...new Set(list)])

const description = z
  .string()
  .trim()
  .max(WEBHOOK_LIMITS.descriptionLength, `must be at most ${WEBHOOK_LIMITS.descriptionLength} characters`)
  .refine(isPlainText, PLAIN_TEXT_MESSAGE)
  .nullable()

export const createWebhookSchema = z.strictObject({ url, events, description: description.optional() })

export const updateWebhookSchema = z
  .strictObject({
    url: url.optional(),
    events: events.optional(),
    description: description.optional(),
    enabled: z.boolean().optional(),
    rotate_secret: z.literal(true, { error: 'must be true (omit it to keep the secret)' }).optional(),
  })
  .refine((v) => Object.keys(v).length > 0, {
    error: 'send url, events, description, enabled or rotate_secret',
    ...onList, // an unknown field is the problem to report, not emptiness
  })

export const deliveryQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(WEBHOOK_LIMITS.maxPageSize).optional(),
  /** The previous page's `next_cursor`. */
  cursor: z
    .string()
    .regex(/^\d{1,16}\.msg_[0-9a-f]{32}$/, 'must be a next_cursor this route answered')
    .optional(),
})

/** A webhook as answered; the secret only in the answers that create or rotate it. */
export const webhookJson = (row: WebhookRow) => ({
  id: row.id,
  project_id: row.project_id,
  url: row.url,
  events: JSON.parse(row.events) as string[],
  description: row.description,
  enabled: Boolean(row.enabled),
  disabled_reason: row.disabled_reason,
  failing_since: isoOrNull(row.failing_since),
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
})

/** A delivery as answered (the payload parsed: it is the body the target got). */
export const deliveryJson = (row: DeliveryRow) => ({
  id: row.id,
  webhook_id: row.webhook_id,
  event_type: row.event_type,
  status: row.status,
  attempts: Number(row.attempts),
  next_attempt_at: row.status === 'pending' ? iso(row.next_attempt_at) : null,
  last_status: row.last_status === null ? null : Number(row.last_status),
  last_error: row.last_error,
  last_response: row.last_response,
  last_attempt_at: isoOrNull(row.last_attempt_at),
  created_at: iso(row.created_at),
  delivered_at: isoOrNull(row.delivered_at),
  payload: JSON.parse(row.payload) as unknown,
})
