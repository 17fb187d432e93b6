import type { Knex } from 'knex'
import { generateMessageId } from './signer.js'
import { type DeliveryRow, WEBHOOK_TABLES, type WebhookEventType } from './tables.js'

/** One event for a project's webhooks; `data` is the body's `data` as sent. */
export interface WebhookEvent {
  type: WebhookEventType
  projectId: string
  data: Record<string, unknown>
}

export interface EmitOptions {
  /** Epoch ms of the event (the body's `timestamp`, the delivery's first attempt); default `Date.now()`. */
  now?: number
}

/** The body every delivery of an event signs and sends: `{type, timestamp, data}`. */
export const eventBody = (type: string, now: number, data: Record<string, unknown>): string =>
  JSON.stringify({ type, timestamp: new Date(now).toISOString(), data })

/** Whether a webhook's event list (as stored, a JSON array) takes the type. */
function subscribes(events: string, type: string): boolean {
  const list = JSON.parse(events) as string[]
  return list.includes('*') || list.includes(type)
}

/** A pending delivery row of `body` to one webhook, due at `now`. */
export const pendingDelivery = (webhookId: string, type: string, body: string, now: number): DeliveryRow => ({
  id: generateMessageId(),
  webhook_id: webhookId,
  event_type: type,
  payload: body,
  status: 'pending',
  attempts: 0,
  next_attempt_at: now,
  lease_owner: null,
  lease_until: null,
  last_status: null,
  last_error: null,
  last_response: null,
  last_attempt_at: null,
  created_at: now,
  delivered_at: null,
})

// Rows per insert: 15 columns each stays far under SQLite's variable limit.
const ROWS_PER_INSERT = 200

/**
 * Writes the events into the outbox with `trx`, the transaction of the change
 * they describe: a delivery row for each enabled webhook of the project that
 * subscribes to the type. The change and its deliveries commit together or
 * not at all; the delivery worker sends them after the commit. Returns the
 * delivery ids (the `webhook-id`s).
 */
export async function emitWebhookEvents(
  trx: Knex,
  events: readonly WebhookEvent[],
  options: EmitOptions = {},
): Promise<string[]> {
  if (events.length === 0) return []
  const now = options.now ?? Date.now()
  const projects = [...new Set(events.map((e) => e.projectId))]
  const hooks = (await trx(WEBHOOK_TABLES.webhooks)
    .whereIn('project_id', projects)
    .andWhere('enabled', true)
    .select('id', 'project_id', 'events')) as Array<{ id: string; project_id: string; events: string }>
  if (hooks.length === 0) return []
  const rows: DeliveryRow[] = []
  for (const event of events) {
    const targets = hooks.filter((h) => h.project_id === event.projectId && subscribes(h.events, event.type))
    if (targets.length === 0) continue
    const body = eventBody(event.type, now, event.data)
    for (const hook of targets) rows.push(pendingDelivery(hook.id, event.type, body, now))
  }
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    await trx(WEBHOOK_TABLES.deliveries).insert(rows.slice(i, i + ROWS_PER_INSERT))
  }
  return rows.map((r) => r.id)
}

/** `emitWebhookEvents` for one event (segments, change requests, schedules). */
export function emitWebhookEvent(trx: Knex, event: WebhookEvent, options: EmitOptions = {}): Promise<string[]> {
  return emitWebhookEvents(trx, [event], options)
}
