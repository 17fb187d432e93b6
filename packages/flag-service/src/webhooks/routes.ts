import { randomUUID } from 'node:crypto'
import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, type Response, Router } from 'express'
import type { Knex } from 'knex'
import { projectOf, requireProjectRole } from '../auth/guards.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import { UUID_PATTERN } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { eventBody, pendingDelivery } from './emit.js'
import {
  deleteWebhookRow,
  deliveryPage,
  deliveryRow,
  insertDelivery,
  insertWebhook,
  listWebhookRows,
  updateDelivery,
  updateWebhookRow,
  webhookRow,
} from './queries.js'
import {
  createWebhookSchema,
  deliveryJson,
  deliveryQuerySchema,
  updateWebhookSchema,
  WEBHOOK_LIMITS,
  webhookJson,
} from './schemas.js'
import { generateSecret } from './signer.js'
import { type DeliveryRow, WEBHOOK_TEST_EVENT, type WebhookRow } from './tables.js'

const DELIVERY_ID = /^msg_[0-9a-f]{32}$/

const noWebhook = (raw: string) => new HttpError('not_found', `no webhook ${JSON.stringify(raw)} in this project`)
const noDelivery = (raw: string) => new HttpError('not_found', `no delivery ${JSON.stringify(raw)} of this webhook`)
const disabled = (hook: WebhookRow) =>
  new HttpError('conflict', `webhook ${hook.id} is disabled: enable it first (PATCH {"enabled": true})`, {
    disabled_reason: hook.disabled_reason,
  })

type Handler = (req: Request, res: Response) => Promise<void>

/**
 * /api/projects/:project_id/webhooks (after `loadProject`): project admins
 * (and the project's server keys) manage webhooks and read their deliveries.
 * `poke` wakes the delivery worker after a route queued a delivery.
 */
export function createWebhooksRouter(runtime: ServiceRuntime, poke: () => void, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)
  router.use(requireProjectRole('admin'))
  router.get('/', listWebhooks(runtime))
  router.post('/', ...body, createWebhook(runtime))
  router.get('/:wid', getWebhook(runtime))
  router.patch('/:wid', ...body, updateWebhook(runtime))
  router.delete('/:wid', deleteWebhook(runtime))
  router.get('/:wid/deliveries', listDeliveries(runtime))
  router.post('/:wid/deliveries/:did/redeliver', redeliver(runtime, poke))
  router.post('/:wid/test', sendTest(runtime, poke))
  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/:wid', 'GET, PATCH, DELETE')
  allowOnly(router, '/:wid/deliveries', 'GET')
  allowOnly(router, '/:wid/deliveries/:did/redeliver', 'POST')
  allowOnly(router, '/:wid/test', 'POST')
  return router
}

/** The project's webhook named in the path, read with `knex` (a write's transaction inside one), or a 404. */
async function findWebhook(knex: Knex, req: Request): Promise<WebhookRow> {
  const raw = String(req.params.wid)
  const row = UUID_PATTERN.test(raw) ? await webhookRow(knex, projectOf(req).id, raw.toLowerCase()) : undefined
  if (!row) throw noWebhook(raw)
  return row
}

function listWebhooks({ knex }: ServiceRuntime): Handler {
  return async (req, res) => {
    const rows = await listWebhookRows(knex, projectOf(req).id)
    res.json(rows.map(webhookJson))
  }
}

function getWebhook({ knex }: ServiceRuntime): Handler {
  return async (req, res) => {
    res.json(webhookJson(await findWebhook(knex, req)))
  }
}

// The secret is in this answer and in a rotation's, nowhere else.
function createWebhook(runtime: ServiceRuntime): Handler {
  return async (req, res) => {
    const input = parseOr422(createWebhookSchema, req.body, 'webhook')
    const now = runtime.clock()
    const row: WebhookRow = {
      id: randomUUID(),
      project_id: projectOf(req).id,
      url: input.url,
      events: JSON.stringify(input.events),
      description: input.description ?? null,
      secret: generateSecret(),
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      created_at: now,
      updated_at: now,
    }
    await runtime.write((trx) => insertWebhook(trx, row), undefined, req)
    res.json({ ...webhookJson(row), secret: row.secret })
  }
}

function updateWebhook(runtime: ServiceRuntime): Handler {
  return async (req, res) => {
    const input = parseOr422(updateWebhookSchema, req.body, 'webhook')
    const updated = await runtime.write(
      async (trx) => {
        const current = await findWebhook(trx, req)
        const changes: Partial<WebhookRow> = { updated_at: runtime.clock() }
        if (input.url !== undefined) changes.url = input.url
        if (input.events !== undefined) changes.events = JSON.stringify(input.events)
        if (input.description !== undefined) changes.description = input.description
        if (input.rotate_secret) changes.secret = generateSecret()
        if (input.enabled !== undefined && input.enabled !== Boolean(current.enabled)) {
          changes.enabled = input.enabled
          changes.disabled_reason = input.enabled ? null : 'disabled by a project admin'
          changes.failing_since = null
        }
        await updateWebhookRow(trx, current.id, changes)
        return { ...current, ...changes }
      },
      undefined,
      req,
    )
    res.json({ ...webhookJson(updated), ...(input.rotate_secret ? { secret: updated.secret } : {}) })
  }
}

function deleteWebhook(runtime: ServiceRuntime): Handler {
  return async (req, res) => {
    await runtime.write(
      async (trx) => {
        const hook = await findWebhook(trx, req)
        await deleteWebhookRow(trx, hook.id)
      },
      undefined,
      req,
    )
    noContent(res)
  }
}

// Newest first; `next_cursor` (null on the last page) asks for the next, older page.
function listDeliveries({ knex }: ServiceRuntime): Handler {
  return async (req, res) => {
    const hook = await findWebhook(knex, req)
    const query = parseOr422(deliveryQuerySchema, req.query, 'query')
    const limit = query.limit ?? WEBHOOK_LIMITS.pageSize
    const rows = await deliveryPage(knex, hook.id, query.cursor, limit + 1)
    const page = rows.slice(0, limit)
    const last = page[page.length - 1]
    res.setHeader('Cache-Control', 'no-store')
    res.json({
      deliveries: page.map(deliveryJson),
      next_cursor: rows.length > limit && last ? `${Number(last.created_at)}.${last.id}` : null,
    })
  }
}

// The same message again (same webhook-id), due now, whatever became of it.
function redeliver(runtime: ServiceRuntime, poke: () => void): Handler {
  return async (req, res) => {
    const raw = String(req.params.did)
    const row = await runtime.write(
      async (trx) => {
        const hook = await findWebhook(trx, req)
        const found = DELIVERY_ID.test(raw) ? await deliveryRow(trx, hook.id, raw) : undefined
        // What the path names comes first: an unknown delivery is a 404 whether or not its webhook is enabled.
        if (!found) throw noDelivery(raw)
        if (!hook.enabled) throw disabled(hook)
        const again = {
          status: 'pending' as const,
          next_attempt_at: runtime.clock(),
          lease_owner: null,
          lease_until: null,
        }
        await updateDelivery(trx, found.id, again)
        return { ...found, ...again } as DeliveryRow
      },
      undefined,
      req,
    )
    poke()
    res.status(202).json(deliveryJson(row))
  }
}

// A `webhook.test` ping to this webhook alone, whatever it subscribes to.
function sendTest(runtime: ServiceRuntime, poke: () => void): Handler {
  return async (req, res) => {
    const project = projectOf(req)
    const row = await runtime.write(
      async (trx) => {
        const hook = await findWebhook(trx, req)
        if (!hook.enabled) throw disabled(hook)
        const now = runtime.clock()
        const data = { project_id: project.id, webhook_id: hook.id, message: 'a test delivery from flagsync' }
        const delivery = pendingDelivery(hook.id, WEBHOOK_TEST_EVENT, eventBody(WEBHOOK_TEST_EVENT, now, data), now)
        await insertDelivery(trx, delivery)
        return delivery
      },
      undefined,
      req,
    )
    poke()
    res.status(202).json(deliveryJson(row))
  }
}
