import { createTestDatabase, DIALECTS, type TestDatabase } from '@flagsync/test-support/databases'
import { afterAll, describe, expect, it } from 'vitest'
import { openServiceRuntime } from '../src/index.js'
import { SERVICE_MIGRATIONS_TABLE, SERVICE_TABLES as T } from '../src/tables.js'
import { T0 } from './harness.js'

// Migration 0003_sdk_key_kind on a database made before it: every key there is a server key.
describe.each(DIALECTS)('migration 0003_sdk_key_kind on an existing %s database', (dialect) => {
  let db: TestDatabase | undefined
  afterAll(async () => {
    await db?.drop()
  })

  it('adds kind, "server" for the keys already stored and by default', async () => {
    db = await createTestDatabase(dialect)
    const id = crypto.randomUUID()
    let runtime = await openServiceRuntime({ databaseUrl: db.url, clock: () => T0 })
    try {
      const { knex } = runtime
      await knex(T.projects).insert({ id, name: 'p', slug: 'p', created_at: 0 })
      const env = { id, project_id: id, name: 'e', slug: 'e', color: '#000000', position: 0, created_at: 0 }
      await knex(T.environments).insert({ ...env, is_default: true, require_approval: false })
      await knex.schema.alterTable(T.sdkKeys, (t) => t.dropColumn('kind'))
      await knex(T.sdkKeys).insert({
        project_id: id,
        environment_id: id,
        name: 'old',
        key_hash: 'a'.repeat(64),
        prefix: 'sk_live_AbCd…',
        created_at: 0,
      })
      await knex(SERVICE_MIGRATIONS_TABLE).where('name', '0003_sdk_key_kind').delete()
    } finally {
      await runtime.close()
    }

    runtime = await openServiceRuntime({ databaseUrl: db.url, clock: () => T0 })
    try {
      const { knex } = runtime
      expect(await knex(T.sdkKeys).select('name', 'kind')).toEqual([{ name: 'old', kind: 'server' }])
      await knex(T.sdkKeys).insert({
        project_id: id,
        environment_id: id,
        name: 'new',
        key_hash: 'b'.repeat(64),
        prefix: 'sk_live_EfGh…',
        created_at: 0,
      })
      expect(await knex(T.sdkKeys).where('name', 'new').first('kind')).toEqual({ kind: 'server' })
    } finally {
      await runtime.close()
    }
  })
})
