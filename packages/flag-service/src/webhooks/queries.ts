import type { Knex } from 'knex'
import { type DeliveryRow, WEBHOOK_TABLES, type WebhookRow } from './tables.js'

const W = WEBHOOK_TABLES.webhooks
const D = WEBHOOK_TABLES.deliveries

/** One webhook of a project (`id` lower-case), or undefined when the project has none with this id. */
export const webhookRow = async (knex: Knex, projectId: string, id: string): Promise<WebhookRow | undefined> =>
  (await knex(W).where({ id, project_id: projectId }).first()) as WebhookRow | undefined

/** A project's webhooks, oldest first. */
export const listWebhookRows = async (knex: Knex, projectId: string): Promise<WebhookRow[]> =>
  (await knex(W).where('project_id', projectId).orderBy(['created_at', 'id'])) as WebhookRow[]

export async function insertWebhook(trx: Knex, row: WebhookRow): Promise<void> {
  await trx(W).insert(row)
}

export async function updateWebhookRow(trx: Knex, id: string, changes: Partial<WebhookRow>): Promise<void> {
  await trx(W).where('id', id).update(changes)
}

/** Deletes a webhook; its deliveries cascade. */
export async function deleteWebhookRow(trx: Knex, id: string): Promise<void> {
  await trx(W).where('id', id).delete()
}

/**
 * Up to `limit` deliveries of a webhook, newest first, older than the cursor's
 * `<created_at>.<id>` when given (so a page never repeats or skips a delivery of the same millisecond).
 */
export async function deliveryPage(
  knex: Knex,
  webhookId: string,
  cursor: string | undefined,
  limit: number,
): Promise<DeliveryRow[]> {
  const q = knex(D).where('webhook_id', webhookId)
  if (cursor) {
    const [at, id] = cursor.split('.') as [string, string]
    q.andWhere((w) => {
      w.where('created_at', '<', Number(at)).orWhere((x) => {
        x.where('created_at', Number(at)).andWhere('id', '<', id)
      })
    })
  }
  return (await q
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit)) as DeliveryRow[]
}

/** One delivery of a webhook, or undefined. */
export const deliveryRow = async (trx: Knex, webhookId: string, id: string): Promise<DeliveryRow | undefined> =>
  (await trx(D).where({ id, webhook_id: webhookId }).first()) as DeliveryRow | undefined

export async function updateDelivery(trx: Knex, id: string, changes: Partial<DeliveryRow>): Promise<void> {
  await trx(D).where('id', id).update(changes)
}

export async function insertDelivery(trx: Knex, delivery: DeliveryRow): Promise<void> {
  await trx(D).insert(delivery)
}
