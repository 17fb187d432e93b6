import type { ServiceMigration } from '../tables.js'

/** The webhook feature's tables: the subscriptions and their deliveries (the transactional outbox). */
export const WEBHOOK_TABLES = {
  webhooks: 'flagsync_webhooks',
  deliveries: 'flagsync_webhook_deliveries',
} as const

// The event list is part of the wire contract, shared with the dashboard.
export { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '@flagsync/protocol'

/** The ping `POST …/webhooks/:wid/test` sends to one webhook, whatever it subscribes to. */
export const WEBHOOK_TEST_EVENT = 'webhook.test'

export type DeliveryStatus = 'pending' | 'delivered' | 'failed'

type Num = number | string

export interface WebhookRow {
  id: string
  project_id: string
  url: string
  /** JSON array of event types (or `["*"]`). */
  events: string
  description: string | null
  secret: string
  enabled: boolean | number
  disabled_reason: string | null
  /** When the current run of failed attempts began; null while the target answers 2xx. */
  failing_since: Num | null
  created_at: Num
  updated_at: Num
}

export interface DeliveryRow {
  /** The `webhook-id` header: the same on every attempt and redelivery. */
  id: string
  webhook_id: string
  event_type: string
  /** The signed body, serialized once when the event was written. */
  payload: string
  status: DeliveryStatus
  attempts: Num
  next_attempt_at: Num
  lease_owner: string | null
  lease_until: Num | null
  last_status: Num | null
  last_error: string | null
  last_response: string | null
  last_attempt_at: Num | null
  created_at: Num
  delivered_at: Num | null
}

export const webhookMigration: ServiceMigration = {
  name: '0300_webhooks',
  async up(knex) {
    await knex.schema.createTable(WEBHOOK_TABLES.webhooks, (t) => {
      t.string('id', 36).primary()
      t.string('project_id', 36).notNullable().references('id').inTable('flagsync_projects').onDelete('CASCADE')
      t.text('url').notNullable()
      t.text('events').notNullable()
      t.string('description', 500).nullable()
      // Kept as issued: every attempt signs with it (HMAC needs the key itself, a hash would not do).
      t.string('secret', 100).notNullable()
      t.boolean('enabled').notNullable()
      t.text('disabled_reason').nullable()
      t.bigInteger('failing_since').nullable()
      t.bigInteger('created_at').notNullable()
      t.bigInteger('updated_at').notNullable()
      t.index(['project_id'])
    })
    await knex.schema.createTable(WEBHOOK_TABLES.deliveries, (t) => {
      t.string('id', 40).primary()
      t.string('webhook_id', 36).notNullable().references('id').inTable(WEBHOOK_TABLES.webhooks).onDelete('CASCADE')
      t.string('event_type', 64).notNullable()
      t.text('payload').notNullable()
      t.string('status', 16).notNullable()
      t.integer('attempts').notNullable()
      t.bigInteger('next_attempt_at').notNullable()
      t.string('lease_owner', 64).nullable()
      t.bigInteger('lease_until').nullable()
      t.integer('last_status').nullable()
      t.text('last_error').nullable()
      t.text('last_response').nullable()
      t.bigInteger('last_attempt_at').nullable()
      t.bigInteger('created_at').notNullable()
      t.bigInteger('delivered_at').nullable()
      t.index(['status', 'next_attempt_at'])
      t.index(['webhook_id', 'created_at'])
    })
  },
}
