import { type Collection, OperationRejected, tableCollection } from '@flagsync/receiver'
import { DIALECTS } from '@flagsync/test-support/databases'
import type { Knex } from 'knex'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  batch,
  closeAllHarnesses,
  flagsOf,
  fullFlag,
  type Harness,
  type HarnessOptions,
  insert,
  remove,
  startHarness as startOn,
  update,
} from './harness.js'

afterEach(closeAllHarnesses)

const todoSchema = z.object({
  id: z.string(),
  title: z.string().min(1),
  done: z.boolean().default(false),
  note: z.string().nullable().optional(),
  tags: z.array(z.string()).optional(),
})

async function createTodos(knex: Knex): Promise<void> {
  await knex.schema.createTable('todos', (t) => {
    t.string('id').primary()
    t.string('title').notNullable()
    t.boolean('done').notNullable().defaultTo(false)
    t.string('note').nullable()
    t.text('tags').nullable()
  })
}

const rows = async (h: Harness, table = 'todos') => h.db.knex(table).select('*').orderBy('id')

describe.each(DIALECTS)('on %s', (dialect) => {
  const startHarness = (options: HarnessOptions = {}) => startOn({ dialect, ...options })
  /** How the dialect returns a boolean column. */
  const bool = (value: boolean) => (dialect === 'sqlite' ? Number(value) : value)

  async function todoHarness(extra: Record<string, Collection> = {}): Promise<Harness> {
    const h = await startHarness({
      collections: { todos: tableCollection({ table: 'todos', schema: todoSchema }), ...extra },
    })
    await createTodos(h.db.knex)
    return h
  }

  describe('tableCollection', () => {
    it('inserts, updates only the named columns, replaces on insert, and deletes', async () => {
      const h = await todoHarness()
      const created = await h.post(
        batch([
          insert('t1', { title: 'write tests', done: true, note: 'soon', tags: ['a', 'b'] }, 'todos'),
          insert('t2', { id: 't2', title: 'second' }, 'todos'),
        ]),
      )
      expect(created.status).toBe(200)
      expect(await rows(h)).toEqual([
        { id: 't1', title: 'write tests', done: bool(true), note: 'soon', tags: '["a","b"]' },
        { id: 't2', title: 'second', done: bool(false), note: null, tags: null },
      ])

      // `done` has a schema default: an update that does not name it must leave it alone.
      const updated = await h.post(batch([update('t1', { title: 'write more tests' }, 'todos')]))
      expect(updated.status).toBe(200)
      expect((await rows(h))[0]).toEqual({
        id: 't1',
        title: 'write more tests',
        done: bool(true),
        note: 'soon',
        tags: '["a","b"]',
      })

      // Insert replaces the record: columns it leaves out go back to their defaults.
      await h.post(batch([insert('t1', { title: 'replaced' }, 'todos')]))
      expect((await rows(h))[0]).toEqual({ id: 't1', title: 'replaced', done: bool(false), note: null, tags: null })

      await h.post(batch([remove('t2', 'todos'), remove('gone-already', 'todos')]))
      expect((await rows(h)).map((r) => r.id)).toEqual(['t1'])
    })

    it('rejects invalid records, id mismatches and updates of missing rows with 422 naming the operation', async () => {
      const h = await todoHarness()
      await h.post(batch([insert('t1', { title: 'x' }, 'todos')]))
      const cases: Array<[unknown[], number, string]> = [
        [[insert('t2', { title: '' }, 'todos')], 0, 'operations[0].record.title'],
        [
          [insert('t2', { title: 'ok' }, 'todos'), insert('t3', { id: 'other', title: 'x' }, 'todos')],
          1,
          'operations[1].record.id',
        ],
        [[update('t1', { done: 'yes' }, 'todos')], 0, 'operations[0].changes.done'],
        [[update('t1', { id: 'moved' }, 'todos')], 0, 'operations[0].changes.id'],
        [[update('missing', { title: 'x' }, 'todos')], 0, 'operations[0].recordId'],
        // A typo is refused, not stripped by the plain z.object and answered applied.
        [[insert('t2', { title: 'ok', titel: 'typo' }, 'todos')], 0, 'operations[0].record.titel'],
        [[update('t1', { dnoe: true }, 'todos')], 0, 'operations[0].changes.dnoe'],
      ]
      for (const [ops, operationIndex, path] of cases) {
        const res = await h.post(batch(ops))
        expect(res.status, path).toBe(422)
        expect(res.body.operationIndex, path).toBe(operationIndex)
        expect(
          res.body.issues.map((i: { path: string }) => i.path),
          path,
        ).toContain(path)
      }
      expect(await rows(h)).toEqual([{ id: 't1', title: 'x', done: bool(false), note: null, tags: null }])
    })

    it('applies flags and custom records in one transaction: a bad custom operation rolls back the flag operations', async () => {
      const h = await todoHarness()
      await h.post(batch([insert('existing', { is_enabled: true })]))
      const logBefore = await h.store.changesSince(0)
      const res = await h.post(
        batch([
          insert('new-flag', { is_enabled: true }),
          update('existing', { description: 'changed' }),
          insert('t1', { title: 'fine' }, 'todos'),
          insert('t2', { title: 42 }, 'todos'),
        ]),
      )
      expect(res.status).toBe(422)
      expect(res.body.operationIndex).toBe(3)
      expect(await flagsOf(h.store)).toEqual({ existing: fullFlag('existing') })
      expect(await rows(h)).toEqual([])
      expect(await h.store.changesSince(0)).toEqual(logBefore)

      const ok = await h.post(
        batch([insert('new-flag', { is_enabled: true }), insert('t1', { title: 'fine' }, 'todos')]),
      )
      expect(ok.body.applied).toBe(2)
      expect(Object.keys(await flagsOf(h.store)).sort()).toEqual(['existing', 'new-flag'])
      expect((await rows(h)).map((r) => r.id)).toEqual(['t1'])
    })

    it('a database constraint violation is a 422 for that operation, not a 500', async () => {
      const h = await startHarness({
        collections: {
          users: tableCollection({ table: 'users', schema: z.object({ id: z.string(), email: z.string() }) }),
        },
      })
      await h.db.knex.schema.createTable('users', (t) => {
        t.string('id').primary()
        t.string('email').notNullable().unique()
      })
      const res = await h.post(
        batch([insert('u1', { email: 'a@example.com' }, 'users'), insert('u2', { email: 'a@example.com' }, 'users')]),
      )
      expect(res.status).toBe(422)
      expect(res.body).toMatchObject({
        code: 'validation_failed',
        operationIndex: 1,
        issues: [{ path: 'operations[1]' }],
      })
      expect(await rows(h, 'users')).toEqual([])
    })
  })

  describe('a hand-written Collection', () => {
    /** Keeps a per-record counter and an audit trail, through the batch's transaction. */
    const counters: Collection = {
      async insert({ trx }, recordId, record) {
        if (typeof record.value !== 'number') {
          throw new OperationRejected('value must be a number', [
            { path: 'record.value', message: 'expected a number' },
          ])
        }
        await trx('counters').insert({ id: recordId, value: record.value }).onConflict('id').merge()
        await trx('audit').insert({ entry: `set ${recordId}=${record.value}` })
      },
      async update({ trx }, recordId, changes) {
        const by = changes.increment
        if (typeof by !== 'number') throw new OperationRejected('increment must be a number')
        const changed = await trx('counters').where('id', recordId).increment('value', by)
        if (changed === 0) throw new OperationRejected(`no counter ${recordId}`)
        await trx('audit').insert({ entry: `add ${recordId}+${by}` })
      },
      async delete({ trx }, recordId) {
        await trx('counters').where('id', recordId).delete()
      },
    }

    async function counterHarness(): Promise<Harness> {
      const h = await startHarness({ collections: { counters } })
      await h.db.knex.schema.createTable('counters', (t) => {
        t.string('id').primary()
        t.integer('value').notNullable()
      })
      await h.db.knex.schema.createTable('audit', (t) => {
        t.increments('n')
        t.string('entry')
      })
      return h
    }

    it('is applied with the flags of the same batch, and rolled back with them', async () => {
      const h = await counterHarness()
      const ok = await h.post(
        batch([
          insert('c', { value: 1 }, 'counters'),
          update('c', { increment: 2 }, 'counters'),
          insert('f', { is_enabled: true }),
        ]),
      )
      expect(ok.status).toBe(200)
      expect(await h.db.knex('counters').select('*')).toEqual([{ id: 'c', value: 3 }])

      const bad = await h.post(
        batch([
          update('c', { increment: 10 }, 'counters'),
          remove('f'),
          update('c', { increment: 'lots' }, 'counters'),
        ]),
      )
      expect(bad.status).toBe(422)
      expect(bad.body).toMatchObject({ operationIndex: 2, issues: [{ path: 'operations[2]' }] })
      expect(bad.body.error).toContain('increment must be a number')
      expect(await h.db.knex('counters').select('*')).toEqual([{ id: 'c', value: 3 }])
      expect((await h.db.knex('audit').orderBy('n').select('entry')).map((r) => r.entry)).toEqual([
        'set c=1',
        'add c+2',
      ])
      expect(await flagsOf(h.store)).toEqual({ f: fullFlag('f') })
    })

    it('a replayed batch does not run the handler again', async () => {
      const h = await counterHarness()
      await h.post(batch([insert('c', { value: 0 }, 'counters')]))
      const sent = batch([update('c', { increment: 5 }, 'counters')], 'inc-once')
      await h.post(sent)
      const replay = await h.post(sent)
      expect(replay.body).toEqual({ batchId: 'inc-once', applied: 0, duplicate: true })
      expect(await h.db.knex('counters').select('*')).toEqual([{ id: 'c', value: 5 }])
    })

    it('an error that is not a rejection is a 500 and rolls back', async () => {
      const h = await startHarness({
        collections: {
          broken: {
            async insert({ trx }) {
              await trx('flagsync_meta').insert({ name: 'probe', value: 1 })
              throw new Error('bug in the handler')
            },
            async update() {},
            async delete() {},
          },
        },
      })
      const res = await h.post(batch([insert('f', { is_enabled: true }), insert('x', {}, 'broken')]))
      expect(res.status).toBe(500)
      expect(res.body).toEqual({ error: 'internal error', code: 'internal' })
      expect(await flagsOf(h.store)).toEqual({})
      expect(await h.db.knex('flagsync_meta').where('name', 'probe').first()).toBeUndefined()
    })
  })
})
