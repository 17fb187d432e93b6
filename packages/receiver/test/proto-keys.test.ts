import { tableCollection } from '@flagsync/receiver'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { closeAllHarnesses, flagsOf, type HarnessOptions, startHarness as startOn } from './harness.js'

afterEach(closeAllHarnesses)

/**
 * `/sync` refuses a `__proto__` key of `record`/`changes` (zod's record
 * schema would skip it silently and answer 200), as `/api/flags` answers 422
 * for the same field, whatever the collection, and applies nothing of the
 * batch.
 */
describe.each(DIALECTS)('a __proto__ key in record or changes on %s', (dialect) => {
  const startHarness = (options: HarnessOptions = {}) => startOn({ dialect, ...options })
  // Raw JSON text: an object literal's __proto__ would set the prototype instead of making a key.
  const body = (operation: string, batchId = 'b-proto') => `{"batchId":"${batchId}","operations":[${operation}]}`
  const json = { 'Content-Type': 'application/json' }

  it.each([
    [
      'an insert into flags',
      '{"action":"insert","collection":"flags","recordId":"k","record":{"is_enabled":true,"__proto__":{"x":1}}}',
      'operations[0].record.__proto__',
    ],
    [
      'an update of flags',
      '{"action":"update","collection":"flags","recordId":"k","changes":{"__proto__":{"is_enabled":false},"description":"d"}}',
      'operations[0].changes.__proto__',
    ],
    [
      'an insert into a table collection',
      '{"action":"insert","collection":"notes","recordId":"n","record":{"text":"hi","__proto__":null}}',
      'operations[0].record.__proto__',
    ],
  ])('%s is a 422 naming the field, and nothing is applied', async (_name, operation, path) => {
    const h = await startHarness({
      collections: {
        notes: tableCollection({ table: 'notes', schema: z.object({ id: z.string(), text: z.string() }) }),
      },
    })
    await h.db.knex.schema.createTable('notes', (t) => {
      t.string('id').primary()
      t.string('text')
    })
    const seeded = await h.post(
      body('{"action":"insert","collection":"flags","recordId":"k","record":{"is_enabled":true}}', 'seed'),
      json,
    )
    expect(seeded.status).toBe(200)
    const before = await flagsOf(h.store)

    const res = await h.post(body(operation), json)
    expect(res.status).toBe(422)
    expect(res.body).toMatchObject({
      code: 'validation_failed',
      operationIndex: 0,
      issues: [{ path, message: '__proto__ is not allowed as a field name' }],
    })
    expect(res.body.error).toContain(path)
    expect(await flagsOf(h.store)).toEqual(before)
    expect(await h.db.knex('notes').select('*')).toEqual([])
    // The refused batch id was not recorded: the same id without the key is applied.
    const parsed = JSON.parse(operation)
    delete (parsed.record ?? parsed.changes).__proto__ // JSON.parse made it an own key: this removes just it
    const clean = JSON.stringify(parsed)
    expect((await h.post(body(clean), json)).status).toBe(200)
  })

  it('a nested __proto__ inside a field value is data, kept as sent (a table collection stores it as JSON)', async () => {
    const h = await startHarness({
      collections: {
        notes: tableCollection({ table: 'notes', schema: z.object({ id: z.string(), meta: z.unknown() }) }),
      },
    })
    await h.db.knex.schema.createTable('notes', (t) => {
      t.string('id').primary()
      t.text('meta')
    })
    const res = await h.post(
      body('{"action":"insert","collection":"notes","recordId":"n","record":{"meta":{"__proto__":{"a":1}}}}'),
      json,
    )
    expect(res.status).toBe(200)
    const [row] = await h.db.knex('notes').select('meta')
    expect(row.meta).toBe('{"__proto__":{"a":1}}')
  })
})
