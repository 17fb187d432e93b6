import type { Operation } from '@flagsync/protocol'
import { createSyncClient, type SyncClient } from '@flagsync/sync-client'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// A model of two editors against the real receiver (flat API on listen(0), SQLite): random interleavings of offline
// edits (each based on the revision the editor last saw), deliveries (after which the editor's stream catches up),
// and resolutions ('mine' or 'theirs'). Invariants: no edit is applied twice, none silently overwrites a change the
// editor had not seen, none is lost (each is applied, superseded by the same editor's later edit of that field, or
// dropped by that editor choosing 'theirs'), and a delivery never leaves an unrelated edit behind.

const FIELDS = ['rollout_percentage', 'description'] as const
type Field = (typeof FIELDS)[number]
type Who = 'ann' | 'bob'

interface Audit {
  revision: number
  changedFields: string[]
  after: Record<string, unknown> | null
  declaredActor: { name: string } | null
  source: { type: string; batchId?: string; operationIndex?: number } | null
}

type Command =
  | { type: 'edit'; who: Who; key: number; field: Field }
  | { type: 'deliver'; who: Who }
  | { type: 'resolve'; who: Who; choice: 'mine' | 'theirs' }

const who = fc.constantFrom<Who>('ann', 'bob')
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('edit' as const),
      who,
      key: fc.nat(1),
      field: fc.constantFrom(...FIELDS),
    }),
  },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('deliver' as const), who }) },
  {
    weight: 1,
    arbitrary: fc.record({
      type: fc.constant('resolve' as const),
      who,
      choice: fc.constantFrom('mine' as const, 'theirs' as const),
    }),
  },
)

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server?.dispose()
})

let run = 0

describe('two editors, random interleavings, against the real receiver', () => {
  it('every edit is applied, merged, or held as a conflict until resolved: never overwritten unseen, lost or applied twice', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 14 }), async (commands) => {
        run++
        const keys = [`r${run}-a`, `r${run}-b`]
        for (const key of keys) {
          const res = await server.request('/api/flags', { method: 'POST', body: { key, is_enabled: true } })
          expect(res.status).toBe(200)
        }
        const revisionOf = async (key: string) =>
          ((await (await server.request(`/api/flags/${key}`)).json()) as { revision: number }).revision
        /** Each sent operation's base, by batch id and index (to judge what the server applied). */
        const sentBase = new Map<string, number | undefined>()
        let value = 0
        const editors = {} as Record<Who, Editor>
        interface Editor {
          name: string
          sync: SyncClient
          seen: Map<string, number>
          edits: Array<{ key: string; field: Field; value: number | string }>
          dropped: Set<string>
        }
        for (const w of ['ann', 'bob'] as const) {
          const sync = createSyncClient({
            webhookUrl: `${server.url}/sync`,
            indexedDB: new IDBFactory(),
            IDBKeyRange,
            locks: null,
            broadcastChannel: null,
            pushDelayMs: null,
            actor: w,
            fetch: async (url, init) => {
              const body = JSON.parse(String(init?.body)) as { batchId: string; operations: Operation[] }
              for (const [i, op] of body.operations.entries()) sentBase.set(`${body.batchId}/${i}`, op.baseRevision)
              return fetch(url, init)
            },
          })
          const seen = new Map<string, number>()
          for (const key of keys) seen.set(key, await revisionOf(key))
          editors[w] = { name: w, sync, seen, edits: [], dropped: new Set() }
        }
        const catchUp = async (e: Editor) => {
          for (const key of keys) e.seen.set(key, await revisionOf(key))
        }
        const deliver = async (e: Editor) => {
          await e.sync.flush()
          // Unrelated edits are never blocked: whatever is still queued belongs to a conflicted record.
          const conflicted = new Set((await e.sync.conflicts()).map((c) => c.recordId))
          for (const entry of await e.sync.outbox()) expect(conflicted.has(entry.operation.recordId)).toBe(true)
          await catchUp(e) // online: the editor's stream shows the server's flags
        }
        const resolveFirst = async (e: Editor, choice: 'mine' | 'theirs') => {
          const [conflict] = await e.sync.conflicts()
          if (!conflict) return false
          if (choice === 'theirs' && conflict.mine.action === 'update') {
            for (const [f, v] of Object.entries(conflict.mine.changes)) e.dropped.add(`${conflict.recordId}/${f}/${v}`)
          }
          await e.sync.resolve(conflict.id, choice)
          return true
        }

        try {
          for (const c of commands) {
            const e = editors[c.who]
            if (c.type === 'edit') {
              const key = keys[c.key] as string
              const v = c.field === 'rollout_percentage' ? ++value % 101 : `v${++value}`
              e.edits.push({ key, field: c.field, value: v })
              await e.sync.update('flags', key, { [c.field]: v }, { baseRevision: e.seen.get(key) as number })
            } else if (c.type === 'deliver') await deliver(e)
            else await resolveFirst(e, c.choice)
          }
          // Settle: both deliver, keeping their own version of anything still in conflict.
          for (let round = 0; round < 6; round++) {
            let busy = false
            for (const e of Object.values(editors)) {
              await deliver(e)
              while (await resolveFirst(e, 'mine')) busy = true
              if ((await e.sync.pending()) > 0) busy = true
            }
            if (!busy) break
          }
          for (const e of Object.values(editors)) {
            expect(await e.sync.conflicts()).toEqual([])
            expect(await e.sync.pending()).toBe(0)
          }

          for (const key of keys) {
            const { entries } = (await (await server.request(`/api/flags/${key}/history?limit=1000`)).json()) as {
              entries: Audit[]
            }
            const oldestFirst = [...entries].reverse()
            // Never applied twice.
            const sources = oldestFirst
              .filter((a) => a.source?.type === 'sync')
              .map((a) => `${a.source?.batchId}/${a.source?.operationIndex}`)
            expect(new Set(sources).size).toBe(sources.length)
            // Never overwritten unseen: a field another editor changed last was changed again only from a base
            // that includes that change.
            for (const [i, entry] of oldestFirst.entries()) {
              if (entry.source?.type !== 'sync') continue
              const base = sentBase.get(`${entry.source.batchId}/${entry.source.operationIndex}`)
              for (const field of entry.changedFields) {
                const previous = oldestFirst
                  .slice(0, i)
                  .reverse()
                  .find((p) => p.changedFields.includes(field))
                if (!previous || previous.declaredActor === null) continue
                if (previous.declaredActor.name === entry.declaredActor?.name) continue
                expect(
                  base,
                  `${key}.${field} at revision ${entry.revision} overwrote ${previous.revision} unseen`,
                ).toBeGreaterThanOrEqual(previous.revision)
              }
            }
            // Never lost.
            for (const e of Object.values(editors)) {
              for (const [i, edit] of e.edits.entries()) {
                if (edit.key !== key) continue
                const superseded = e.edits.slice(i + 1).some((l) => l.key === key && l.field === edit.field)
                if (superseded || e.dropped.has(`${key}/${edit.field}/${edit.value}`)) continue
                const applied = entries.some(
                  (a) => a.declaredActor?.name === e.name && a.after?.[edit.field] === edit.value,
                )
                expect(applied, `${e.name}'s ${key}.${edit.field} = ${edit.value} was lost`).toBe(true)
              }
            }
          }
        } finally {
          for (const e of Object.values(editors)) await e.sync.close()
        }
      }),
      { numRuns: 30 },
    )
  }, 240_000)
})
