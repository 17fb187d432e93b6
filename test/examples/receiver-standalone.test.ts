import type { AddressInfo } from 'node:net'
import { createApp, migrateAppTables } from '@flagsync/example-receiver-standalone/app'
import { type Database, FlagStore, openDatabase } from '@flagsync/store'
import { createSyncClient, manualOnlineSource, type SyncClient } from '@flagsync/sync-client'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

let db: Database
let url: string
let close: () => Promise<void>
let dir: ReturnType<typeof tempDir>
const clients: SyncClient[] = []

beforeEach(async () => {
  dir = tempDir('flagsync-example-')
  db = await openDatabase(`sqlite:${dir.file('app.sqlite')}`)
  await migrateAppTables(db)
  const server = createApp({ db, apiKey: 'dev-key' }).listen(0, '127.0.0.1')
  await new Promise((r) => server.once('listening', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  close = () => new Promise((r) => server.close(() => r()))
})
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close()
  await close()
  await db.close()
  dir.remove()
})

function client(apiKey: string) {
  const c = createSyncClient({
    webhookUrl: `${url}/webhooks/flagsync`,
    headers: { 'X-Api-Key': apiKey },
    indexedDB: new IDBFactory(),
    IDBKeyRange,
    online: manualOnlineSource(true),
    locks: null,
    broadcastChannel: null,
  })
  clients.push(c)
  return c
}

describe('examples/receiver-standalone', () => {
  it('applies flags, a table collection and a handler collection sent by the real sync client', async () => {
    const sync = client('dev-key')
    const todoId = await sync.insert('todos', { title: 'Ship it' })
    await sync.update('todos', todoId, { done: true })
    await sync.insert('audit', { entry: 'shipped' }, { recordId: 'a-1' })
    await sync.insert('flags', { key: 'new-ui', is_enabled: true }, { recordId: 'new-ui' }) // a flag's record id is its key
    const result = await sync.flush()
    expect(result).toEqual({ delivered: 3, pending: 0 }) // insert+update compacted into one insert
    expect(await db.knex('todos').select()).toEqual([{ id: todoId, title: 'Ship it', done: 1 }])
    expect(await db.knex('audit_log').pluck('entry')).toEqual(['a-1: shipped'])
    expect(await new FlagStore(db).get('new-ui')).toMatchObject({ key: 'new-ui', is_enabled: true })
    const todos = await fetch(`${url}/todos`)
    expect(await todos.json()).toEqual([{ id: todoId, title: 'Ship it', done: 1 }])
  })

  it("refuses a sender without the app's API key, and the client holds its queue", async () => {
    const sync = client('wrong-key')
    await sync.insert('todos', { title: 'nope' }, { recordId: 't1' })
    const result = await sync.flush()
    expect(result.pending).toBe(1)
    expect(await db.knex('todos').select()).toEqual([])
  })

  it("enforces the handler collection's own rules as a 422 naming the operation", async () => {
    const sync = client('dev-key')
    await sync.update('audit', 'a-1', { entry: 'rewritten' })
    await sync.flush()
    const [entry] = await sync.outbox()
    expect(entry?.operation).toMatchObject({ action: 'update', collection: 'audit' })
    expect(await db.knex('audit_log').select()).toEqual([])
  })
})
