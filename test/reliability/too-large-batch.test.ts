import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterEach, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../..', import.meta.url))
const SDK_KEY = 'k'.repeat(32)

/**
 * The real sync client in Node (fake-indexeddb, Node's fetch), in its own
 * process so that it races the server's close as a remote client does: 20
 * flags of about 1 MB each, cut as one 20 MB batch (`batchSize: 20`) and then,
 * by a client of the same outbox with `batchSize: 4`, re-cut into batches of
 * about 4 MB that fit the flat API's 5 MiB `/sync` limit, as the sync
 * client's README documents for a 413 (see `batchSize`).
 */
const CLIENT = `
  import { createSyncClient, manualOnlineSource } from '@flagsync/sync-client'
  import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
  const [url, key] = process.argv.slice(1)
  const indexedDB = new IDBFactory()
  const client = (batchSize) => createSyncClient({
    webhookUrl: url, headers: { Authorization: 'Bearer ' + key }, indexedDB, IDBKeyRange,
    online: manualOnlineSource(true), locks: null, broadcastChannel: null, batchSize,
    retry: { baseMs: 5, maxMs: 20, jitter: 0 },
  })
  const values = Array.from({ length: 1000 }, (_, i) => String(i).padStart(1000, 'v'))
  const big = client(20)
  for (let i = 0; i < 20; i++) {
    const record = { key: 'big-' + i, is_enabled: true, rules: [{ attribute: 'id', operator: 'equals', values }] }
    await big.insert('flags', record, { recordId: record.key })
  }
  // Each flush sends the stored batch again: every one of them must come back as the 413.
  const bigRounds = []
  for (let round = 0; round < 8; round++) {
    const flushed = await big.flush()
    bigRounds.push({ flushed, status: await big.status() })
  }
  await big.close()
  const small = client(4)
  const smallFlush = await small.flush()
  const smallStatus = await small.status()
  await small.close()
  console.log(JSON.stringify({ bigRounds, smallFlush, smallStatus }))
`

interface Status {
  state: string
  pending: number
  lastError: null | { kind: string; status?: number; code: string; message: string }
}

const servers: TestServer[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await server.dispose()
})

describe('a sync client in Node whose batch is far over the /sync limit', () => {
  it('gets the 413 (blocked, lastError names payload_too_large), and a client with a smaller batchSize re-cuts and delivers it', {
    timeout: 120_000,
  }, async () => {
    const server = await startTestServer({ env: { SDK_KEY } })
    servers.push(server)
    const { stdout } = await run(
      process.execPath,
      ['--input-type=module', '-e', CLIENT, `${server.url}/sync`, SDK_KEY],
      {
        cwd: root,
        maxBuffer: 16 * 1024 * 1024,
        timeout: 100_000,
      },
    )
    const result = JSON.parse(stdout) as {
      bigRounds: Array<{ flushed: unknown; status: Status }>
      smallFlush: unknown
      smallStatus: Status
    }

    // The documented 413: a rejection that blocks the queue, not a network error that backs off.
    expect(result.bigRounds).toHaveLength(8)
    for (const round of result.bigRounds) {
      expect(round.flushed).toEqual({ delivered: 0, pending: 20 })
      expect(round.status).toMatchObject({
        state: 'blocked',
        pending: 20,
        lastError: { kind: 'rejected', status: 413, code: 'payload_too_large' },
      })
    }
    // The same outbox with batchSize 4 is refused the stored 20 MB batch once more, re-cuts it and delivers it all.
    expect(result.smallFlush).toEqual({ delivered: 20, pending: 0 })
    expect(result.smallStatus).toMatchObject({ state: 'idle', pending: 0, lastError: null })

    const listed = (await (await server.request('/api/flags')).json()) as Array<{ key: string }>
    expect(listed.map((flag) => flag.key).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `big-${i}`).sort())
  })
})
