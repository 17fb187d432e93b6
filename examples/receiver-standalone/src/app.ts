import { createHash, timingSafeEqual } from 'node:crypto'
import { type Collection, createReceiver, OperationRejected, tableCollection } from '@flagsync/receiver'
import { type Database, FlagStore } from '@flagsync/store'
import express, { type Express, type RequestHandler } from 'express'
import { z } from 'zod'

/** Your own tables, in your own migrations: the receiver never creates them. */
export async function migrateAppTables(db: Database): Promise<void> {
  const { knex } = db
  if (!(await knex.schema.hasTable('todos'))) {
    await knex.schema.createTable('todos', (t) => {
      t.string('id').primary()
      t.string('title', 200).notNullable()
      t.boolean('done').notNullable().defaultTo(false)
    })
  }
  if (!(await knex.schema.hasTable('audit_log'))) {
    await knex.schema.createTable('audit_log', (t) => {
      t.increments('id')
      t.string('entry', 500).notNullable()
    })
  }
}

/** A collection with rules of its own, written as a handler: append-only notes that must not be edited. */
const auditCollection: Collection = {
  async insert({ trx }, recordId, record) {
    const entry = z.string().min(1).max(500).safeParse(record.entry)
    if (!entry.success) throw new OperationRejected('an audit entry needs an `entry` string of 1 to 500 characters')
    await trx('audit_log').insert({ entry: `${recordId}: ${entry.data}` })
  },
  async update() {
    throw new OperationRejected('audit entries are append-only')
  },
  async delete() {
    throw new OperationRejected('audit entries are append-only')
  },
}

/**
 * Your own auth, in front of the receiver: here an API key header checked in
 * constant time. The sync client sends it through its `headers` option.
 */
function requireApiKey(apiKey: string): RequestHandler {
  const expected = createHash('sha256').update(apiKey).digest()
  return (req, res, next) => {
    const given = createHash('sha256')
      .update(String(req.headers['x-api-key'] ?? ''))
      .digest()
    if (timingSafeEqual(given, expected)) return next()
    res.status(401).json({ error: 'missing or wrong X-Api-Key header', code: 'unauthorized' })
  }
}

export interface AppOptions {
  db: Database
  apiKey: string
}

/** The application: its own routes, and the flagsync receiver mounted at /webhooks/flagsync. */
export function createApp({ db, apiKey }: AppOptions): Express {
  const receiver = createReceiver({
    store: new FlagStore(db),
    collections: {
      todos: tableCollection({
        table: 'todos',
        schema: z.object({ id: z.string(), title: z.string().min(1).max(200), done: z.boolean().default(false) }),
      }),
      audit: auditCollection,
    },
  })
  const app = express()
  app.get('/todos', async (_req, res) => {
    res.json(await db.knex('todos').select().orderBy('id'))
  })
  app.use('/webhooks/flagsync', requireApiKey(apiKey), receiver)
  return app
}
