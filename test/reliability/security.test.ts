import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { loadReceiverConfig, startReceiverServer } from '@flagsync/receiver'
import { createLogger, type Logger, secretsEqual } from '@flagsync/server-kit'
import { createTestDatabase, DIALECTS, type TestDatabase } from '@flagsync/test-support/databases'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { openSse } from '@flagsync/test-support/sse-reader'
import { afterEach, describe, expect, it } from 'vitest'
import { dbError, faultSwitch, serversPerTest } from './harness.js'

/** Each `describe` below proves one line of the checklist in SECURITY.md. */

const { start, cleanups } = serversPerTest()

/** A pino logger at trace level writing into memory. */
function captureLogs(): { logger: Logger; text: () => string; lines: () => Array<Record<string, unknown>> } {
  let out = ''
  const sink = new Writable({
    write(chunk, _encoding, done) {
      out += chunk
      done()
    },
  })
  const logger = createLogger({ level: 'trace', name: 'captured' }, sink)
  return {
    logger,
    text: () => out,
    lines: () =>
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  }
}

const KEY = 'sk_live_9f8e7d6c5b4a39281706f5e4d3c2b1a0'

describe('constant-time key comparison', () => {
  it('secretsEqual accepts only the exact key, for inputs of any length, without throwing', () => {
    expect(secretsEqual(KEY, KEY)).toBe(true)
    // Same length, one character off (first, middle, last).
    for (const i of [0, KEY.length >> 1, KEY.length - 1]) {
      const wrong = KEY.slice(0, i) + (KEY[i] === 'x' ? 'y' : 'x') + KEY.slice(i + 1)
      expect(wrong).toHaveLength(KEY.length)
      expect(secretsEqual(wrong, KEY)).toBe(false)
    }
    // Different lengths: both sides are hashed to a fixed size first, so the comparison never depends on (or
    // leaks) the length of the key.
    for (const given of ['', 'a', KEY.slice(0, -1), `${KEY}0`, KEY.repeat(100), KEY.toUpperCase(), `${KEY}\0`]) {
      expect(() => secretsEqual(given, KEY)).not.toThrow()
      expect(secretsEqual(given, KEY)).toBe(false)
    }
  })

  it('the server rejects a wrong key of the same and of a different length, and never echoes it', async () => {
    const server = await start({ config: { sdkKey: KEY } })
    const sameLength = `${KEY.slice(0, -1)}X`
    for (const [given, expected] of [
      [`Bearer ${sameLength}`, 401],
      [`Bearer ${KEY.slice(0, 8)}`, 401],
      [`Bearer ${KEY}extra`, 401],
      [`Bearer ${KEY} ${KEY}`, 401],
      [`Basic ${KEY}`, 401],
      [KEY, 401],
      [`bearer ${KEY}`, 200], // the scheme is case-insensitive (RFC 7235)
      [`Bearer ${KEY}`, 200],
    ] as const) {
      const res = await fetch(`${server.url}/api/flags`, { headers: { Authorization: given } })
      expect(res.status, given).toBe(expected)
      if (expected === 401) {
        expect(res.headers.get('www-authenticate')).toBe('Bearer')
        const body = await res.text()
        expect(body).not.toContain(sameLength)
        expect(body).not.toContain(KEY)
      }
    }
    // The key is accepted in the Authorization header only, not in the URL.
    expect((await fetch(`${server.url}/api/flags?sdk_key=${KEY}`)).status).toBe(401)
  })

  it('authentication runs before the body is read: an unauthenticated 10 MB body is a 401, not a 413', async () => {
    const server = await start({ config: { sdkKey: KEY } })
    const res = await fetch(`${server.url}/api/flags`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ key: 'x', is_enabled: true, description: 'x'.repeat(10 * 1024 * 1024) }),
    })
    expect(res.status).toBe(401)
  })
})

describe('keys are never logged', () => {
  it('in-process: requests with wrong and right keys, 401, 404, 422, 503 and 500 paths log no key', async () => {
    const logs = captureLogs()
    const receiverToken = 'rt_live_0a1b2c3d4e5f60718293a4b5c6d7e8f9'
    const fault = faultSwitch()
    const server = await start({
      config: { sdkKey: KEY, receiverToken },
      logger: logs.logger,
      extras: { storeOptions: { beforeCommit: fault.beforeCommit } },
    })
    const call = (path: string, init: RequestInit = {}, key = KEY) =>
      fetch(`${server.url}${path}`, {
        ...init,
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', ...init.headers },
      })
    const flag = JSON.stringify({ key: 'f', is_enabled: true })
    expect((await call('/api/flags', {}, `${KEY.slice(0, -1)}X`)).status).toBe(401)
    expect((await call('/api/flags', {}, 'short')).status).toBe(401)
    expect((await call('/api/flags', { method: 'POST', body: flag })).status).toBe(200)
    expect((await call('/api/flags/missing')).status).toBe(404)
    expect((await call('/api/flags', { method: 'POST', body: '{"key":1}' })).status).toBe(422)
    const batch = JSON.stringify({ batchId: 'b', operations: [] })
    expect((await call('/sync', { method: 'POST', body: batch }, KEY)).status).toBe(401) // the receiver has its own token
    expect((await call('/sync', { method: 'POST', body: batch }, receiverToken)).status).toBe(200)
    const stream = await openSse(`${server.url}/stream`, { Authorization: `Bearer ${KEY}` })
    await stream.waitForCount(2)
    stream.close()

    fault.set(dbError('SQLITE_BUSY: database is locked', 'SQLITE_BUSY'))
    expect((await call('/api/flags', { method: 'POST', body: flag })).status).toBe(503)
    fault.set(() => Object.assign(new Error(`driver exploded near ${KEY}?`), { code: 'XX000' }))
    expect((await call('/api/flags', { method: 'POST', body: flag })).status).toBe(500)
    fault.clear()

    // The 500 and the 503 were logged with their cause (so the check below looked at real output)...
    const errors = logs.lines().filter((l) => l.level === 50)
    expect(errors.length).toBeGreaterThanOrEqual(1)
    expect(logs.text()).toContain('internal error')
    // ...and neither key appears anywhere, also not in the request line or headers.
    // (The thrown error above deliberately carried the key in its message: see the next assertion.)
    const withoutCause = logs.text().replaceAll(`driver exploded near ${KEY}?`, '')
    expect(withoutCause).not.toContain(KEY)
    expect(logs.text()).not.toContain(receiverToken)
  })

  it('the redaction list masks credentials wherever a request or config object is logged', () => {
    const logs = captureLogs()
    logs.logger.info({ req: { headers: { authorization: `Bearer ${KEY}` } } }, 'request')
    logs.logger.info({ headers: { authorization: `Bearer ${KEY}` } }, 'headers')
    logs.logger.info({ authorization: KEY, sdkKey: KEY, token: KEY, config: { sdkKey: KEY } }, 'config')
    expect(logs.text()).not.toContain(KEY)
    expect(logs.text().match(/\[redacted\]/g)?.length).toBe(6)
  })

  describe('the real CLI process (stdout and stderr)', () => {
    const children: SpawnedServer[] = []
    const databases: TestDatabase[] = []
    afterEach(async () => {
      for (const c of children.splice(0)) c.kill()
      for (const d of databases.splice(0)) await d.drop()
    })

    it('logs neither SDK_KEY nor the DATABASE_URL password, at trace level, including a failed start', async () => {
      const db = await createTestDatabase('postgres')
      databases.push(db)
      const password = 'pw_c0rrect-h0rse-battery'
      // The test cluster trusts local connections, so any password works and this one must stay secret.
      const url = db.url.replace('postgres://postgres@', `postgres://postgres:${password}@`)
      expect(url).toContain(password)
      const server = await spawnServer('packages/flat-api/dist/cli.js', {
        DATABASE_URL: url,
        SDK_KEY: KEY,
        LOG_LEVEL: 'trace',
      })
      children.push(server)
      for (const key of [KEY, 'wrong', `${KEY.slice(0, -1)}X`]) {
        await fetch(`${server.url}/api/flags`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ key: 'cli', is_enabled: true }),
        })
      }
      server.kill('SIGTERM')
      expect(await server.exited).toBe(0)
      expect(server.output()).toMatch(/listening on/)
      expect(server.output()).not.toContain(KEY)
      expect(server.output()).not.toContain(password)

      const unreachable = `postgres://someone:${password}@127.0.0.1:1/nowhere`
      const failed = await spawnServer('packages/flat-api/dist/cli.js', {
        DATABASE_URL: unreachable,
        SDK_KEY: KEY,
        LOG_LEVEL: 'trace',
      }).catch((error: Error) => error.message)
      expect(failed).toMatch(/exited \(1\) before listening/)
      expect(failed).toMatch(/unavailable|ECONNREFUSED/)
      expect(failed).not.toContain(KEY)
      expect(failed).not.toContain(password)

      // A DATABASE_URL of the wrong kind is named by its scheme only.
      const wrongKind = await spawnServer('packages/flat-api/dist/cli.js', {
        DATABASE_URL: `mysql://someone:${password}@db.internal/flags`,
      }).catch((error: Error) => error.message)
      expect(wrongKind).toMatch(/DATABASE_URL must start with sqlite: or postgres:\/\/ \(got a \\?"mysql:\\?" URL\)/)
      expect(wrongKind).not.toContain(password)
    })
  })
})

describe('body and batch limits', () => {
  // Also: packages/flat-api/test/flags-api.test.ts (413 over 1 MB), packages/receiver/test/receiver.test.ts
  // (413 over 1000 operations and over maxBytes), test/reliability/fuzz-*.test.ts (random oversized bodies).
  it('BODY_LIMIT is honoured for /api/flags; /sync keeps its own 5 MB and 1000-operation limits', async () => {
    const server = await start({ env: { BODY_LIMIT: '4kb' } })
    const body = (n: number) => JSON.stringify({ key: 'b', is_enabled: true, description: 'd'.repeat(n) })
    expect((await server.request('/api/flags', { method: 'POST', body: body(3000) })).status).toBe(200)
    const over = await server.request('/api/flags', { method: 'POST', body: body(5000) })
    expect(over.status).toBe(413)
    expect(await over.json()).toMatchObject({ code: 'payload_too_large' })

    const ops = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ action: 'delete', collection: 'flags', recordId: `r${i}` }))
    expect(
      (await server.request('/sync', { method: 'POST', body: { batchId: 'x', operations: ops(1000) } })).status,
    ).toBe(200)
    const tooMany = await server.request('/sync', { method: 'POST', body: { batchId: 'y', operations: ops(1001) } })
    expect(tooMany.status).toBe(413)
    expect(await tooMany.json()).toMatchObject({ code: 'payload_too_large', maxOperations: 1000 })
  })
})

describe('CORS allow-list', () => {
  const allowed = 'https://app.example.com'
  const other = 'https://evil.example.com'

  it('answers allowed origins only, on the API, the stream and the receiver; preflights work', async () => {
    const server = await start({ config: { sdkKey: KEY, corsOrigins: [allowed] } })
    for (const path of ['/api/flags', '/api/flags/x', '/stream', '/sync']) {
      const preflight = (origin: string) =>
        fetch(`${server.url}${path}`, {
          method: 'OPTIONS',
          headers: {
            Origin: origin,
            'Access-Control-Request-Method': path === '/sync' ? 'POST' : 'GET',
            'Access-Control-Request-Headers': 'authorization,content-type',
          },
        })
      const ok = await preflight(allowed)
      expect(ok.status, path).toBe(204)
      expect(ok.headers.get('access-control-allow-origin'), path).toBe(allowed)
      expect(ok.headers.get('access-control-allow-headers')?.toLowerCase(), path).toContain('authorization')
      expect(ok.headers.get('access-control-allow-credentials'), path).toBeNull()
      const denied = await preflight(other)
      expect(denied.headers.get('access-control-allow-origin'), path).toBeNull()
    }
    const get = (origin: string) =>
      fetch(`${server.url}/api/flags`, { headers: { Origin: origin, Authorization: `Bearer ${KEY}` } })
    const fromAllowed = await get(allowed)
    expect(fromAllowed.status).toBe(200)
    expect(fromAllowed.headers.get('access-control-allow-origin')).toBe(allowed)
    expect(fromAllowed.headers.get('vary')).toMatch(/Origin/i)
    const fromOther = await get(other)
    expect(fromOther.headers.get('access-control-allow-origin')).toBeNull()
    // CORS is not authentication: an allowed origin still needs the key.
    expect((await fetch(`${server.url}/api/flags`, { headers: { Origin: allowed } })).status).toBe(401)
  })

  it('sends no CORS headers at all when no origins are configured', async () => {
    const server = await start()
    const res = await fetch(`${server.url}/api/flags`, {
      method: 'OPTIONS',
      headers: { Origin: allowed, 'Access-Control-Request-Method': 'POST' },
    })
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
    const get = await fetch(`${server.url}/api/flags`, { headers: { Origin: allowed } })
    expect(get.headers.get('access-control-allow-origin')).toBeNull()
  })
})

describe.each(DIALECTS)('SQL only through bound parameters, on %s', (dialect) => {
  const injection = "'; DROP TABLE flagsync_flags; --"

  it('hostile text in every field round-trips and no table is touched', async () => {
    const server = await start({ dialect })
    const victims = ['victim-1', 'victim-2']
    for (const key of victims) await server.request('/api/flags', { method: 'POST', body: { key, is_enabled: true } })
    const flag = {
      key: 'sqli',
      is_enabled: true,
      description: `${injection} ' " \\ \`; SELECT pg_sleep(10); --`,
      rules: [{ attribute: `${injection}`, operator: 'equals', values: [injection, "x' OR '1'='1"] }],
    }
    expect((await server.request('/api/flags', { method: 'POST', body: flag })).status).toBe(200)
    const back = await (await server.request('/api/flags/sqli')).json()
    expect(back).toEqual({ ...flag, rollout_percentage: null, revision: 3 })
    // Read back from the database, not the live set (which adds the read-only revision).
    const { revision: _readOnly, ...stored } = back
    expect(await server.runtime.store.get('sqli')).toEqual(stored)

    // Deletes by hostile keys: the API answers 204 (no flag has such a key), the receiver a 422 naming the operation
    // (a wrong id in a batch); the hostile batch id and field values below still reach the database, bound.
    expect(
      (await server.request(`/api/flags/${encodeURIComponent("x' OR '1'='1")}`, { method: 'DELETE' })).status,
    ).toBe(204)
    const refused = await server.request('/sync', {
      method: 'POST',
      body: {
        batchId: `${injection}'refused`,
        operations: [
          { action: 'delete', collection: 'flags', recordId: "x' OR '1'='1" },
          { action: 'delete', collection: 'flags', recordId: `${injection}` },
        ],
      },
    })
    expect(refused.status).toBe(422)
    expect(await refused.json()).toMatchObject({ operationIndex: 0, code: 'validation_failed' })
    const batch = {
      batchId: `${injection}'batch`,
      operations: [{ action: 'update', collection: 'flags', recordId: 'sqli', changes: { description: injection } }],
    }
    const res = await server.request('/sync', { method: 'POST', body: batch })
    expect(res.status).toBe(200)
    // The hostile batch id was stored verbatim: the replay is recognised as a duplicate.
    expect(await (await server.request('/sync', { method: 'POST', body: batch })).json()).toEqual({
      batchId: batch.batchId,
      applied: 0,
      duplicate: true,
    })
    const { knex } = server.runtime.db
    for (const table of ['flagsync_heads', 'flagsync_changes', 'flagsync_batches', 'flagsync_meta']) {
      expect(await knex.schema.hasTable(table), table).toBe(true)
    }
    // flagsync_flags is a view of the heads and the log since migration 0004: still there, still answering.
    expect((await knex('flagsync_flags').orderBy('key').pluck('key')).sort()).toEqual(['sqli', ...victims])
    const keys = (await server.runtime.store.loadAll('')).rows.map((r) => r.key)
    expect(keys).toEqual(['sqli', ...victims])
    expect((await server.runtime.store.get('sqli'))?.description).toBe(injection)
  })
})

describe('SQL only through bound parameters: the source', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url))

  /**
   * Every call that hands SQL text to a driver in packages/*\/src. Knex's query builder binds values by
   * itself; these are the places where SQL is written as text, so none may build it from values. Two
   * interpolate, both from trusted constants: the LISTEN channel name (LISTEN takes no parameters) and the
   * integer busy timeout in the SQLite connection PRAGMA.
   */
  const ALLOWED: Record<string, string[]> = {
    'packages/store/src/open-database.ts': [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'conn.exec(\n          `PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = ${busyTimeout}; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;`',
    ],
    // Reviewed: the change log's statements interpolate only constants of this package (ENTRY_COLUMNS, headOf()
    // called with `?` or column names, the dialect's pairs subquery) and `(n,?,?,?,?)` groups numbered by our own
    // loop; every value is bound.
    'packages/store/src/audit-log.ts': [
      'knex.raw(ENTRY_COLUMNS))\n      .from({ c: TABLES',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'knex.raw(\n      `with recursive walk(revision, prev, depth) as (\n         select c.revision, c.prev_revision, 1 from "flagsync_changes" c\n         where c.revision = ? and c.scope = ? and c.key = ?\n         union all\n         select c.revision, c.prev_revision, w.depth + 1\n         from walk w join "flagsync_changes" c on c.revision = w.prev\n         where w.depth < ? and c.revision > ?\n       )\n       select ${ENTRY_COLUMNS}\n       from walk w join "flagsync_changes" c on c.revision = w.revision\n       left join "flagsync_changes" p on p.revision = c.prev_revision\n       where c.revision > ?\n       order by c.revision desc`',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      "knex.raw(`select ${headOf('?', '?')} as head`",
    ],
    'packages/store/src/statements.ts': [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      "trx.raw(\n      `insert into \"flagsync_changes\"\n         (revision, scope, key, data, created_at, actor, declared_actor, source, batch_id, op_index, prev_revision)\n       select ?::bigint + c.n, c.scope, c.key, c.data, ?::bigint, ?, ?, ?, ?, c.op, ${headOf('c.scope', 'c.key')}\n       from unnest(?::text[], ?::text[], ?::text[], ?::int[]) with ordinality as c(scope, key, data, op, n)`",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      "sqliteRun(\n      trx,\n      `insert into \"flagsync_changes\"\n         (revision, scope, key, data, created_at, actor, declared_actor, source, batch_id, op_index, prev_revision)\n       select ? + v.column1, v.column2, v.column3, v.column4, ?, ?, ?, ?, ?, v.column5,\n         ${headOf('v.column2', 'v.column3')}\n       from (values ${values.join(',')}) v`",
      // The same inserts with each row's own audit columns (a write where some changes have their own context).
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      "trx.raw(\n      `insert into \"flagsync_changes\"\n         (revision, scope, key, data, created_at, actor, declared_actor, source, batch_id, op_index, prev_revision)\n       select ?::bigint + c.n, c.scope, c.key, c.data, ?::bigint, c.actor, c.declared, c.source, c.batch, c.op,\n         ${headOf('c.scope', 'c.key')}\n       from unnest(?::text[], ?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::text[], ?::text[])\n         with ordinality as c(scope, key, data, op, actor, declared, source, batch, n)`",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      "sqliteRun(\n      trx,\n      `insert into \"flagsync_changes\"\n         (revision, scope, key, data, created_at, actor, declared_actor, source, batch_id, op_index, prev_revision)\n       select ? + v.column1, v.column2, v.column3, v.column4, ?, v.column6, v.column7, v.column8, v.column9, v.column5,\n         ${headOf('v.column2', 'v.column3')}\n       from (values ${values.join(',')}) v`",
      // The heads' upsert and delete: module constants of fixed SQL, on either dialect.
      'sqliteRun(trx, UPSERT_HEADS, [base])\n  else await trx.',
      'trx.raw(UPSERT_HEADS, [base])\n  if (!deletes) r',
      'sqliteRun(trx, DELETE_HEADS, [base])\n  else await trx.',
      'trx.raw(DELETE_HEADS, [base])\n}\n\nconst UPSERT_H',
      // The base-state walk and its JSON read: module constants of fixed SQL per dialect, every value bound.
      'q.raw(WALK_CHAINS[dialect], all))\n}\n\n/** A wa',
      'q.raw(CHANGE_DATA[dialect], [list] as Knex.Ra',
    ],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
    'packages/store/src/change-feed.ts': ['conn.query(`LISTEN ${NOTIFY_CHANNEL}`'],
    // Reviewed: prepares only the SQL handed to sqliteAll/sqliteRun, whose call sites this scan checks like raw calls.
    'packages/store/src/sqlite-statements.ts': ['conn.prepare(sql)\n    const oldest = cache.size >= M'],
    // Reviewed: only table/column constants, an index name from the store's own list and `?` placeholder
    // lists are interpolated; every value is bound.
    'packages/flag-service/src/impressions/intern.ts': [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'trx.raw(\n    `insert into ${T.envs} (environment_id, stored) values (?, 0) on conflict (environment_id) do nothing`',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      "trx.raw(\n      `insert into ${spec.table} (${columns.join(', ')}) values ${placeholders(chunk.length, columns.length)} on conflict (${spec.ownerColumn}, ${spec.nameColumn}) do nothing`",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'trx.raw(\n      `insert into ${T.series} (flag_id, value_id, stored) values ${placeholders(chunk.length, 3)} on conflict (flag_id, value_id) do nothing`',
    ],
    'packages/flag-service/src/impressions/sql-postgres.ts': [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'trx.raw(\n    `insert into ${T.impressions} (${ROW_COLUMNS}) select * from unnest(?::int[], ?::int[], ?::int[], ?::int[], ?::text[], ?::text[], ?::bigint[], ?::bigint[])`',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'trx.raw(\n      `insert into ${T.users} (flag_id, user_id) select * from unnest(?::int[], ?::text[]) on conflict do nothing returning flag_id`',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'trx.raw(\n      `insert into ${F} (id, environment_id, flag_key, total, true_count, false_count, unique_users, last_seen, stored) `',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      "trx.raw(\n      `insert into ${table} (id, ${keyColumns.join(', ')}, stored) values ${placeholders(chunk.length, keyColumns.length + 2)} `",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'knex.raw(`${T.impressions} as i`',
    ],
    'packages/flag-service/src/impressions/sql-sqlite.ts': [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'trx.raw(\n    `insert into ${T.impressions} (${ROW_COLUMNS}) select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7 from json_each(?)`',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'trx.raw(\n      `insert into ${T.users} (flag_id, user_id) select value ->> 0, value ->> 1 from json_each(?) where true on conflict do nothing returning flag_id`',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'knex.raw(`${T.impressions} as i indexed by ${index.name}`',
    ],
    // Placeholders only: one `when ? then ?` pair per row, the table name a constant.
    'packages/flag-service/src/schedules/claim.ts': [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      "trx.raw(\n    `update \"${SCHEDULES_TABLE}\" set status = ${byId}, result = ${byId}, applied_at = ?\n     where id in (${rows.map(() => '?').join(', ')})`",
    ],
    'packages/flag-service/src/impressions/prune.ts': [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of the call, matched verbatim
      'trx.raw(\n          `delete from ${T.impressions} where id in (select id from ${T.impressions} order by id limit ?) and received_at < ? returning env_id, flag_id, value_id, series_id`',
    ],
  }

  function sources(dir: string): string[] {
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) return sources(path)
      return /\.(ts|js|mjs)$/.test(name) && !name.endsWith('.d.ts') ? [path] : []
    })
  }

  it('no raw SQL is built from values: every raw/query/exec call is a plain literal or listed here', () => {
    const found: Record<string, string[]> = {}
    const plain: string[] = []
    const unlisted: string[] = []
    const files = readdirSync(join(root, 'packages')).flatMap((pkg) => {
      const src = join(root, 'packages', pkg, 'src')
      try {
        return sources(src)
      } catch {
        return []
      }
    })
    expect(files.length).toBeGreaterThan(20)
    // `.raw(`, `.whereRaw(` and friends and `.query(` with any argument; `.exec(` with a string argument
    // (a RegExp's `.exec(value)` takes a variable and is not SQL).
    // The store's SQLite write path runs its statements through `sqliteAll`/`sqliteRun(trx, sql, …)` (prepared once per
    // connection with `.prepare(sql)`): their SQL argument is checked like a raw call's.
    const call =
      /(\w+)?\.(raw|\w+Raw|query|exec|prepare)\(\s*(['"`]?)|\b(sqliteAll|sqliteRun)(?:<[^>()]*>)?\(\s*trx,\s*(['"`]?)/g
    for (const file of files) {
      const text = readFileSync(file, 'utf8')
      const rel = relative(root, file)
      for (const match of text.matchAll(call)) {
        const [, receiver, rawMethod, rawQuote, helper, helperQuote] = match
        const method = rawMethod ?? helper
        const quote = rawMethod ? rawQuote : helperQuote
        if (method === 'exec' && !quote) continue
        const from = match.index ?? 0
        const literal = quote ? readLiteral(text, from + match[0].length - 1) : undefined
        const isPlain =
          literal !== undefined &&
          !literal.includes('${') &&
          !/^\s*\+/.test(text.slice(from + match[0].length - 1 + literal.length))
        if (isPlain) {
          plain.push(`${rel}: ${receiver ?? ''}.${method}(${literal}`)
          continue
        }
        const snippet = text.slice(from, from + match[0].length - 1 + (literal?.length ?? 40))
        if (!(ALLOWED[rel] ?? []).includes(snippet)) unlisted.push(`${rel}: ${snippet}`)
        found[rel] = [...(found[rel] ?? []), snippet]
      }
    }
    // Every call that builds SQL text was reviewed and listed above.
    expect(unlisted, 'SQL built from values?').toEqual([])
    // Every allow-listed call still exists (a stale entry would allow a future one silently).
    for (const [file, snippets] of Object.entries(ALLOWED)) {
      for (const snippet of snippets) expect(found[file] ?? [], file).toContainEqual(snippet)
    }
    // The scan really sees the store's literal raw calls (so a broken pattern cannot pass vacuously).
    expect(plain).toContain("packages/store/src/flag-store.ts: trx.raw('select pg_notify(?, ?)'")
    expect(plain).toContain("packages/store/src/run-migrations.ts: knex.raw('select pg_advisory_lock(?)'")
    expect(plain).toContain(
      'packages/store/src/statements.ts: .sqliteRun(`update "flagsync_meta" set value = ? where name = \'revision\'`',
    )
  })
})

/** The literal starting at `start` (a quote character), including both quotes. */
function readLiteral(text: string, start: number): string {
  const quote = text[start]
  let i = start + 1
  while (i < text.length && text[i] !== quote) i += text[i] === '\\' ? 2 : 1
  return text.slice(start, i + 1)
}

describe('a clear warning when running without SDK_KEY', () => {
  // The CLI prints it too: test/server/cli.test.ts ("warns without SDK_KEY").
  it('the flat API warns once at start without SDK_KEY, and not with one', async () => {
    const without = captureLogs()
    await start({ logger: without.logger })
    const warnings = without.lines().filter((l) => l.level === 40)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]?.msg).toMatch(/SDK_KEY is not set: authentication is OFF/)
    expect(warnings[0]?.msg).toMatch(/Development use only/)

    const withKey = captureLogs()
    await start({ config: { sdkKey: KEY }, logger: withKey.logger })
    expect(withKey.text()).not.toMatch(/SDK_KEY is not set/)
  })

  it('the standalone receiver warns without RECEIVER_TOKEN or SDK_KEY', async () => {
    const db = await createTestDatabase('sqlite')
    cleanups.push(() => db.drop())
    const logs = captureLogs()
    const receiver = await startReceiverServer(loadReceiverConfig({ DATABASE_URL: db.url, PORT: '0' }), {
      logger: logs.logger,
    })
    cleanups.push(() => receiver.close())
    expect(logs.text()).toMatch(/authentication is OFF/)
  })
})
