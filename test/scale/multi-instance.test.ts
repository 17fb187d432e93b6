import { createTestDatabase, DIALECTS, type TestDatabase } from '@flagsync/test-support/databases'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { afterEach, describe, expect, it } from 'vitest'

const children: SpawnedServer[] = []
const readers: SseReader[] = []
const databases: TestDatabase[] = []
afterEach(async () => {
  for (const r of readers.splice(0)) r.close()
  for (const c of children.splice(0)) c.kill()
  for (const d of databases.splice(0)) await d.drop()
})

const json = (body: unknown) => ({
  method: 'POST',
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
})

describe.each(DIALECTS)('two server processes on one %s database', (dialect) => {
  it('a change through either one reaches stream subscribers of both within 1 s', async () => {
    const db = await createTestDatabase(dialect)
    databases.push(db)
    // PostgreSQL: the poll is set to 10 minutes, so only LISTEN/NOTIFY can deliver in time.
    // SQLite: polling is the only way, so it is set below 1 s.
    const env = { DATABASE_URL: db.url, POLL_INTERVAL_MS: dialect === 'sqlite' ? '200' : '600000' }
    const a = await spawnServer('packages/flat-api/dist/cli.js', env)
    children.push(a)
    const b = await spawnServer('packages/flat-api/dist/cli.js', env)
    children.push(b)
    const streamA = await openSse(`${a.url}/stream`)
    const streamB = await openSse(`${b.url}/stream`)
    readers.push(streamA, streamB)
    await streamA.waitForCount(1)
    await streamB.waitForCount(1)

    const viaApi = Date.now()
    expect((await fetch(`${a.url}/api/flags`, json({ key: 'from-a', is_enabled: true }))).status).toBe(200)
    const isFromA = (e: { data: string }) => e.data.includes('"from-a"')
    await streamA.waitFor(isFromA, 1000)
    await streamB.waitFor(isFromA, 1000)
    expect(Date.now() - viaApi).toBeLessThan(1000)

    const viaReceiver = Date.now()
    const batch = {
      batchId: 'multi-1',
      operations: [{ action: 'insert', collection: 'flags', recordId: 'from-b', record: { is_enabled: false } }],
    }
    expect((await fetch(`${b.url}/sync`, json(batch))).status).toBe(200)
    const isFromB = (e: { data: string }) => e.data.includes('"from-b"')
    const [onA, onB] = await Promise.all([streamA.waitFor(isFromB, 1000), streamB.waitFor(isFromB, 1000)])
    expect(Date.now() - viaReceiver).toBeLessThan(1000)
    expect(onA.id).toBe(onB.id) // the same revision on every instance

    // Both instances' list routes (served from their live sets) converge.
    const lists = await Promise.all([a, b].map(async (s) => (await fetch(`${s.url}/api/flags`)).json()))
    expect(lists[0]).toEqual(lists[1])
  })
})
