import type { ServiceMigration } from '../tables.js'
import { webhookMigration } from './tables.js'

export { type EmitOptions, emitWebhookEvent, emitWebhookEvents, type WebhookEvent } from './emit.js'
export { generateSecret, signatureOf, signedHeaders } from './signer.js'
export { WEBHOOK_EVENT_TYPES, WEBHOOK_TABLES, WEBHOOK_TEST_EVENT, type WebhookEventType } from './tables.js'

/** Webhooks and their deliveries; named 0300_… so they sort after the flag feature's. */
export const webhookMigrations: ServiceMigration[] = [webhookMigration]
