// Impressions, against the flag service's CLI on SQLite and, when a PostgreSQL server is at hand
// (FLAGSYNC_PG_URL, or a throwaway cluster from the local binaries), on PostgreSQL too:
// - impressions[.pg].ingest_per_s: POST batches of 500 with the SDK key (autocannon, 32 connections) into a fresh database;
//   baseline = knex inserting the same rows into the same table and indexes (one multi-row insert per batch, in-process);
// - impressions[.pg].list_filtered.ms: GET …/impressions with each filter at 5 000 000 stored impressions, the slowest
//   filter's median; baseline = the bare indexed SELECT of the same page, in-process;
// - impressions[.pg].stats.ms: GET …/impressions/stats at 5 000 000; baseline = the bare SELECT of the rollup rows;
// - impressions[.pg].ingest_at_5m_per_s: the ingest run again on the loaded database (no goal; what scale costs).
// While iterating: `--ingest-only` (or BENCH_IMPRESSIONS_INGEST_ONLY=1) runs only the ingest row of each dialect,
// `--dialect=sqlite|postgres` (or BENCH_IMPRESSIONS_DIALECT) only one dialect. The full run is the default.
import { execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import pg from 'pg'
import { listImpressions } from '../packages/flag-service/dist/impressions/list.js'
// The impression store's internals, which the package does not export: the bench reads its query plans.
import { IMPRESSION_INDEXES, IMPRESSION_TABLES as T } from '../packages/flag-service/dist/impressions/tables.js'
import { openServiceRuntime } from '../packages/flag-service/dist/index.js'
import { atLeast, atMost, benchMain, log, row } from './lib/cli.mjs'
import { startCli, tempDir } from './lib/proc.mjs'
import { prng } from './lib/random.mjs'
import { median, now, percentile } from './lib/stats.mjs'

const SERVICE_CLI = 'packages/flag-service/dist/cli.js'
const BATCH = 500
const FLAGS = 50 // flag-0 … flag-49: 40 boolean flags, 10 string flags with three variants
const USERS = 100_000
const DAY = 86_400_000

/** The value flag `f` gives, by a draw in [0, 1). @param {number} f @param {number} r */
const valueFor = (f, r) => (f < 40 ? (r < 0.5 ? 'true' : 'false') : `variant-${Math.floor(r * 3)}`)
const VALUES = ['true', 'false', 'variant-0', 'variant-1', 'variant-2']

/** `count` request bodies of 500 impressions each (seeded, so every run sends the same). */
function makeBodies(count, seed) {
  const random = prng(seed)
  return Array.from({ length: count }, () =>
    JSON.stringify(
      Array.from({ length: BATCH }, () => {
        const f = Math.floor(random() * FLAGS)
        const user = random() < 0.1 ? null : `user-${Math.floor(random() * USERS)}`
        return {
          flag_key: `flag-${f}`,
          user_id: user,
          value: valueFor(f, random()),
          context: random() < 0.25 ? { user_id: user, country: 'DE', plan: 'pro' } : null,
        }
      }),
    ),
  )
}

/** autocannon POSTing the bodies in turn; resolves impressions/s (2xx only). */
function ingestLoad({ url, key, bodies, duration, connections }) {
  if (!/^http:\/\/127\.0\.0\.1[:/]/.test(url)) throw new Error(`refusing to load ${url}`)
  let i = 0
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        duration,
        connections,
        pipelining: 1,
        requests: [
          {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
            setupRequest: (req) => ({ ...req, body: bodies[i++ % bodies.length] }),
          },
        ],
      },
      (err, result) => {
        if (err) return reject(err)
        if (result.non2xx > 0 || result.errors > 0 || result['2xx'] === 0) {
          return reject(
            new Error(`ingest load: ${result['2xx']} 2xx, ${result.non2xx} non-2xx, ${result.errors} errors`),
          )
        }
        resolve({ perSecond: (result['2xx'] * BATCH) / (result.duration || duration), p99: result.latency.p99 })
      },
    )
  })
}

/**
 * CPU time a process has used, ms: in all and on its main thread (the rest is mostly SQLite, which node-sqlite3
 * runs on libuv's pool). Linux only (/proc); undefined elsewhere. @param {number} pid
 */
function cpuOf(pid) {
  const ticks = (path) => {
    const fields = readFileSync(path, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10 // utime + stime, at USER_HZ = 100
  }
  try {
    const threads = {}
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        threads[tid] = ticks(`/proc/${pid}/task/${tid}/stat`)
      } catch {}
    }
    return { total: ticks(`/proc/${pid}/stat`), main: threads[pid] ?? 0, threads }
  } catch {
    return undefined
  }
}

/**
 * CPU time, ms, of a PostgreSQL cluster: the postmaster, every live child (backends, WAL writer, checkpointer…)
 * and the children it has reaped (cutime + cstime). Linux only; undefined without /proc or a pid.
 * @param {number | undefined} postmaster
 */
function clusterCpuOf(postmaster) {
  if (postmaster === undefined) return undefined
  const fieldsOf = (pid) =>
    readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ')
  try {
    const own = fieldsOf(postmaster)
    let ms = (Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])) * 10
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const fields = fieldsOf(entry)
        if (Number(fields[1]) === postmaster) ms += (Number(fields[11]) + Number(fields[12])) * 10
      } catch {} // exited meanwhile: its time is in the postmaster's cutime
    }
    return ms
  } catch {
    return undefined
  }
}

/** The CPU ms of the busiest thread other than the main one between two `cpuOf` readings (SQLite's, in practice). */
function busiestOther(before, after, pid) {
  let most = 0
  for (const [tid, ms] of Object.entries(after.threads)) {
    if (tid !== String(pid)) most = Math.max(most, ms - (before.threads[tid] ?? 0))
  }
  return most
}

/** The service CLI on `databaseUrl`; on an empty database it sets up the workspace and logs the Production key. */
async function startService(databaseUrl) {
  const server = await startCli(SERVICE_CLI, {
    DATABASE_URL: databaseUrl,
    ADMIN_EMAIL: 'bench@example.com',
    ADMIN_PASSWORD: 'bench-password',
    WORKSPACE_NAME: 'Bench',
    IMPRESSION_RETENTION_DAYS: '0', // nothing is pruned while measuring
    LOG_LEVEL: 'info',
  })
  const created =
    /project \\?"Default\\?" \(([0-9a-f-]{36})\); its Production SDK key, shown only now: (sk_live_[\w-]+)/.exec(
      server.output(),
    )
  return { server, projectId: created?.[1], key: created?.[2] }
}

/**
 * Creates the workload's flags in the environment: ingest keeps only impressions of flags the environment has,
 * so a load of unknown keys would measure answers that store nothing.
 */
async function createFlags(url, environmentId, key) {
  for (let f = 0; f < FLAGS; f++) {
    const flag =
      f < 40
        ? { key: `flag-${f}`, is_enabled: true }
        : {
            key: `flag-${f}`,
            is_enabled: true,
            flag_type: 'string',
            default_value: 'variant-0',
            variants: [0, 1, 2].map((v) => ({ value: `variant-${v}`, weight: v === 2 ? 33334 : 33333 })),
          }
    const res = await fetch(`${url}/api/environments/${environmentId}/flags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(flag),
    })
    if (!res.ok) throw new Error(`creating ${flag.key}: ${res.status} ${await res.text()}`)
  }
}

/** POSTs one body and requires the 204 of a batch stored whole (a 200 names impressions that were left out). */
async function ingestStoresAll(url, key, body) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body,
  })
  if (res.status !== 204) throw new Error(`ingest answered ${res.status} ${await res.text()}, not 204`)
}

/** The Production environment's id, asked with its key. */
async function productionOf(url, projectId, key) {
  const res = await fetch(`${url}/api/projects/${projectId}/environments`, {
    headers: { authorization: `Bearer ${key}` },
  })
  const envs = await res.json()
  return envs.find((e) => e.slug === 'production').id
}

/** Bulk-loads impressions straight into the service's tables until `target` are stored, then rebuilds every counter. */
async function bulkLoad(knex, dialect, environmentId, target) {
  const have = Number((await knex(T.impressions).count({ n: '*' }).first()).n)
  const rows = target - have
  if (rows <= 0) return
  const t0 = now()
  // Interned rows for every flag and value of the workload (the ingest runs made most of them already).
  await knex.raw(
    `insert into ${T.envs} (environment_id, stored) values (?, 0) on conflict (environment_id) do nothing`,
    [environmentId],
  )
  const envId = Number((await knex(T.envs).where('environment_id', environmentId).first('id')).id)
  for (let f = 0; f < FLAGS; f++) {
    await knex.raw(
      `insert into ${T.flags} (environment_id, flag_key, total, true_count, false_count, unique_users, last_seen, stored) values (?, ?, 0, 0, 0, 0, 0, 0) on conflict (environment_id, flag_key) do nothing`,
      [environmentId, `flag-${f}`],
    )
  }
  for (const v of VALUES) {
    await knex.raw(
      `insert into ${T.values} (environment_id, value, stored) values (?, ?, 0) on conflict (environment_id, value) do nothing`,
      [environmentId, v],
    )
  }
  const flagIds = new Map(
    (await knex(T.flags).where('environment_id', environmentId)).map((r) => [r.flag_key, Number(r.id)]),
  )
  const valueIds = new Map(
    (await knex(T.values).where('environment_id', environmentId)).map((r) => [r.value, Number(r.id)]),
  )
  // k = flag * 2 + (row parity) → the (flag, value) pair of a generated row.
  const map = []
  for (let f = 0; f < FLAGS; f++) {
    for (let half = 0; half < 2; half++) {
      const value = f < 40 ? (half === 0 ? 'true' : 'false') : `variant-${(f + half) % 3}`
      const flagId = flagIds.get(`flag-${f}`)
      const valueId = valueIds.get(value)
      await knex.raw(
        `insert into ${T.series} (flag_id, value_id, stored) values (?, ?, 0) on conflict (flag_id, value_id) do nothing`,
        [flagId, valueId],
      )
      const seriesId = Number((await knex(T.series).where({ flag_id: flagId, value_id: valueId }).first('id')).id)
      map.push({ k: f * 2 + half, flag_id: flagId, value_id: valueId, series_id: seriesId })
    }
  }
  await knex.schema.dropTableIfExists('bench_map')
  await knex.schema.createTable('bench_map', (t) => {
    t.integer('k').primary()
    t.integer('flag_id')
    t.integer('value_id')
    t.integer('series_id')
  })
  await knex('bench_map').insert(map)

  // Without the indexes while loading (built once afterwards, as a sort), exactly as the migration defines them.
  for (const index of Object.values(IMPRESSION_INDEXES)) await knex.raw(`drop index if exists ${index.name}`)
  const start = Date.now() - 30 * DAY
  const step = Math.max(1, Math.floor((30 * DAY) / rows))
  const user = `case when i % 10 = 0 then null else 'user-' || ((cast(i as bigint) * 7919) % ${USERS}) end`
  const context = `case when i % 4 = 0 then '{"country":"DE","plan":"pro"}' else null end`
  const select = (from) =>
    `select ${envId}, m.flag_id, m.value_id, m.series_id, ${user}, ${context}, ${start} + cast(i as bigint) * ${step}, ${start} + cast(i as bigint) * ${step} ${from} join bench_map m on m.k = (i % ${FLAGS}) * 2 + ((i / ${FLAGS}) % 2)`
  const columns = 'env_id, flag_id, value_id, series_id, user_id, context, evaluated_at, received_at'
  const CHUNK = 1_000_000
  for (let s = 0; s < rows; s += CHUNK) {
    const e = Math.min(rows, s + CHUNK)
    if (dialect === 'postgres') {
      await knex.raw(`insert into ${T.impressions} (${columns}) ${select(`from generate_series(${s}, ${e - 1}) g(i)`)}`)
    } else {
      await knex.raw(
        `with recursive g(i) as (select ${s} union all select i + 1 from g where i + 1 < ${e}) insert into ${T.impressions} (${columns}) ${select('from g')}`,
      )
    }
    log(`  loaded ${have + e} impressions (${Math.round((now() - t0) / 1000)} s)`)
  }
  for (const index of Object.values(IMPRESSION_INDEXES)) {
    await knex.raw(`create index ${index.name} on ${T.impressions} (${index.columns.join(', ')})`)
  }
  log(`  indexes built (${Math.round((now() - t0) / 1000)} s)`)
  await knex.schema.dropTable('bench_map')

  // Every counter from the rows: stored per environment, value, series and flag; the lifetime stats; the pairs.
  await knex.raw(
    `insert into ${T.users} (flag_id, user_id) select distinct flag_id, user_id from ${T.impressions} where user_id is not null on conflict do nothing`,
  )
  const agg = await knex(T.impressions)
    .select('series_id')
    .count({ n: '*' })
    .max({ last: 'evaluated_at' })
    .groupBy('series_id')
  const series = new Map((await knex(T.series).select('id', 'flag_id', 'value_id')).map((r) => [Number(r.id), r]))
  const values = new Map((await knex(T.values).select('id', 'value')).map((r) => [Number(r.id), r.value]))
  const perFlag = new Map()
  const perValue = new Map()
  let total = 0
  for (const a of agg) {
    const s = series.get(Number(a.series_id))
    const n = Number(a.n)
    total += n
    await knex(T.series).where('id', s.id).update({ stored: n })
    perValue.set(Number(s.value_id), (perValue.get(Number(s.value_id)) ?? 0) + n)
    const flag = perFlag.get(Number(s.flag_id)) ?? { total: 0, trueCount: 0, falseCount: 0, last: 0 }
    const value = values.get(Number(s.value_id))
    flag.total += n
    if (value === 'true') flag.trueCount += n
    if (value === 'false') flag.falseCount += n
    flag.last = Math.max(flag.last, Number(a.last))
    perFlag.set(Number(s.flag_id), flag)
  }
  for (const [id, n] of perValue) await knex(T.values).where('id', id).update({ stored: n })
  const users = new Map(
    (await knex(T.users).select('flag_id').count({ n: '*' }).groupBy('flag_id')).map((r) => [
      Number(r.flag_id),
      Number(r.n),
    ]),
  )
  for (const [id, f] of perFlag) {
    await knex(T.flags)
      .where('id', id)
      .update({
        total: f.total,
        true_count: f.trueCount,
        false_count: f.falseCount,
        unique_users: users.get(id) ?? 0,
        last_seen: f.last,
        stored: f.total,
      })
  }
  await knex(T.envs).where('id', envId).update({ stored: total })
  // PostgreSQL's autovacuum would get there too; SQLite never analyzes (the list names its indexes).
  if (dialect === 'postgres') await knex.raw(`vacuum analyze ${T.impressions}`)
  log(`  counters rebuilt: ${total} impressions (${Math.round((now() - t0) / 1000)} s in all)`)
}

/** Median and p95 of `runs` sequential calls (after 3 warm-ups), ms. */
async function timeIt(runs, fn) {
  for (let i = 0; i < 3; i++) await fn()
  const times = []
  for (let i = 0; i < runs; i++) {
    const t = now()
    await fn()
    times.push(now() - t)
  }
  return { median: median(times), p95: percentile(times, 95) }
}

/** A GET that must answer 200; returns the parsed body. */
async function getJson(url, key) {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } })
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`)
  return res.json()
}

/**
 * The list and stats latencies on the loaded database, through the service and
 * as bare SELECTs (the same page, ids resolved beforehand) in this process.
 */
async function measureReads({ url, key, environmentId, knex, dialect, runs }) {
  const ids = async (table, where) => Number((await knex(table).where(where).first('id')).id)
  const envId = await ids(T.envs, { environment_id: environmentId })
  const flag7 = await ids(T.flags, { environment_id: environmentId, flag_key: 'flag-7' })
  const falseId = await ids(T.values, { environment_id: environmentId, value: 'false' })
  const variant1 = await ids(T.values, { environment_id: environmentId, value: 'variant-1' })
  const series = await ids(T.series, { flag_id: flag7, value_id: falseId })
  const recent = Number((await knex(T.impressions).max({ id: 'id' }).first()).id) - 20_000
  // The same index as the service's query (SQLite is told, as the service tells it; PostgreSQL plans).
  const page = (index) =>
    knex
      .from(dialect === 'sqlite' ? knex.raw(`${T.impressions} indexed by ${index.name}`) : T.impressions)
      .select('id', 'user_id', 'context', 'evaluated_at')
      .limit(50)
  const I = IMPRESSION_INDEXES
  const filters = [
    ['flag_key=flag-7', () => page(I.byFlag).where('flag_id', flag7).orderBy('id', 'desc')],
    ['flag_key=flag-7&value=false', () => page(I.bySeries).where('series_id', series).orderBy('id', 'desc')],
    ['user_id=user-4242', () => page(I.byUser).where({ env_id: envId, user_id: 'user-4242' }).orderBy('id', 'desc')],
    ['value=variant-1', () => page(I.byValue).where('value_id', variant1).orderBy('id', 'desc')],
    [
      'flag_key=flag-7&user_id=user-4242',
      () => page(I.byUser).where({ env_id: envId, user_id: 'user-4242', flag_id: flag7 }).orderBy('id', 'desc'),
    ],
    ['flag_key=flag-7&offset=5000', () => page(I.byFlag).where('flag_id', flag7).orderBy('id', 'desc').offset(5000)],
    [
      `flag_key=flag-7&since_id=${recent}`,
      () => page(I.byFlag).where('flag_id', flag7).where('id', '>', recent).orderBy('id'),
    ],
    ['(none)', () => page(I.byEnv).where('env_id', envId).orderBy('id', 'desc')],
  ]
  const list = {}
  let slowest = { name: '', ours: 0, base: 0, p95: 0 }
  for (const [query, bare] of filters) {
    const target = `${url}/api/environments/${environmentId}/impressions${query === '(none)' ? '' : `?${query}`}`
    const body = await getJson(target, key)
    const ours = await timeIt(runs, () => getJson(target, key))
    const base = await timeIt(runs, () => bare())
    list[query] = {
      ms: ours.median,
      p95: ours.p95,
      baseline: base.median,
      items: body.items.length,
      total: body.total,
      plan: await planOf(knex, dialect, environmentId, query),
    }
    if (ours.median > slowest.ours) slowest = { name: query, ours: ours.median, base: base.median, p95: ours.p95 }
  }
  const statsUrl = `${url}/api/environments/${environmentId}/impressions/stats`
  const statsBody = await getJson(statsUrl, key)
  const stats = await timeIt(runs, () => getJson(statsUrl, key))
  const statsBase = await timeIt(runs, () =>
    knex(T.flags)
      .where('environment_id', environmentId)
      .select('flag_key', 'total', 'true_count', 'false_count', 'unique_users', 'last_seen')
      .orderBy('flag_key'),
  )
  return { list, slowest, stats, statsBase, flags: statsBody.length }
}

/** The plans of the statements the service runs for a list query (`EXPLAIN`), one string per statement. */
async function planOf(knex, dialect, environmentId, query) {
  const params = new URLSearchParams(query === '(none)' ? '' : query)
  const filter = { limit: 50, offset: Number(params.get('offset') ?? 0) }
  for (const name of ['flag_key', 'user_id', 'value']) if (params.has(name)) filter[name] = params.get(name)
  if (params.has('since_id')) filter.since_id = Number(params.get('since_id'))
  const seen = []
  const listener = (q) => {
    if (q.sql.includes(`${T.impressions} as i`)) seen.push(q)
  }
  knex.on('query', listener)
  try {
    await listImpressions(knex, dialect, environmentId, filter)
  } finally {
    knex.off('query', listener)
  }
  const plans = []
  for (const q of seen) {
    if (dialect === 'sqlite') {
      const rows = await knex.raw(`explain query plan ${q.sql}`, q.bindings)
      plans.push(rows.map((r) => r.detail).join(' | '))
    } else {
      const result = await knex.raw(`explain (costs off) ${q.sql.replace(/\$\d+/g, '?')}`, q.bindings)
      plans.push(result.rows.map((r) => r['QUERY PLAN'].trim()).join(' | '))
    }
  }
  return plans
}

/** What the rollup saves: the stats computed from the rows (COUNT DISTINCT over millions), once. */
async function naiveStats(knex, environmentId) {
  const envId = Number((await knex(T.envs).where('environment_id', environmentId).first('id')).id)
  const t = now()
  await knex.raw(
    `select f.flag_key, count(*), sum(case when v.value = 'true' then 1 else 0 end), count(distinct i.user_id), max(i.evaluated_at) from ${T.impressions} i join ${T.flags} f on f.id = i.flag_id join ${T.values} v on v.id = i.value_id where i.env_id = ? group by f.flag_key`,
    [envId],
  )
  return now() - t
}

/** knex inserting the bodies' rows into the impressions table of a fresh database, one multi-row insert per batch. */
async function baselineIngest(databaseUrl, bodies, batches) {
  const runtime = await openServiceRuntime({ databaseUrl })
  try {
    const { knex } = runtime
    const projectId = crypto.randomUUID()
    const environmentId = crypto.randomUUID()
    await knex('flagsync_projects').insert({ id: projectId, name: 'p', slug: 'p', created_at: 0 })
    await knex('flagsync_environments').insert({
      id: environmentId,
      project_id: projectId,
      name: 'e',
      slug: 'e',
      color: '#000000',
      is_default: true,
      require_approval: false,
      position: 0,
      created_at: 0,
    })
    const [env] = await knex(T.envs).insert({ environment_id: environmentId, stored: 0 }).returning('id')
    const envId = Number(env.id ?? env)
    // The same spread of ids as interning gives (one per flag, value and pair), so every index has as many
    // insertion points as ours; the rows of interned tables need not exist (no foreign keys on them).
    const idsOf = (it) => {
      const f = Number(it.flag_key.slice('flag-'.length))
      const v = VALUES.indexOf(it.value)
      return { flag_id: f + 1, value_id: v + 1, series_id: f * VALUES.length + v + 1 }
    }
    const parsed = bodies.map((b) => JSON.parse(b))
    const rowsOf = (items, at) =>
      items.map((it) => ({
        env_id: envId,
        ...idsOf(it),
        user_id: it.user_id,
        context: it.context === null ? null : JSON.stringify(it.context),
        evaluated_at: at,
        received_at: at,
      }))
    for (let b = 0; b < 3; b++)
      await knex.transaction((trx) => trx(T.impressions).insert(rowsOf(parsed[b], Date.now())))
    const t = now()
    for (let b = 0; b < batches; b++) {
      const items = parsed[b % parsed.length]
      await knex.transaction((trx) => trx(T.impressions).insert(rowsOf(items, Date.now())))
    }
    return (batches * BATCH) / ((now() - t) / 1000)
  } finally {
    await runtime.close()
  }
}

// --- PostgreSQL: FLAGSYNC_PG_URL, or a throwaway cluster (the logic of test/support/postgres.ts) ---

function findPostgresBin() {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  for (const v of readdirSync(root).sort((a, b) => Number(b) - Number(a))) {
    if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin')
  }
  return undefined
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

async function startPostgres() {
  if (process.env.FLAGSYNC_PG_URL) return { url: process.env.FLAGSYNC_PG_URL, stop() {} }
  const bin = findPostgresBin()
  if (!bin) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'flagsync-bench-pg-'))
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const id = (flag) => Number(execFileSync('id', [flag, 'postgres']).toString().trim())
    chownSync(dir, id('-u'), id('-g'))
  }
  const run = (cmd, args) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { stdio: 'pipe' })
      : execFileSync(join(bin, cmd), args, { stdio: 'pipe' })
  const data = join(dir, 'data')
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync'])
  const port = await freePort()
  // Durable settings (fsync on), a production-like buffer pool; only the socket and port are throwaway.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c shared_buffers=512MB -c max_wal_size=4GB -c maintenance_work_mem=512MB`
  run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '60', 'start'])
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    /** The postmaster's pid (the first line of postmaster.pid), for `clusterCpuOf`. */
    pid: () => Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]),
    stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  }
}

/** A fresh database in the cluster; `drop` removes it. */
async function createPgDatabase(adminUrl) {
  const name = `bench_imp_${Math.random().toString(36).slice(2, 10)}`
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  await client.query(`create database ${name}`)
  await client.end()
  return {
    url: adminUrl.replace(/\/[^/]*$/, `/${name}`),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl })
      await c.connect()
      await c.query(`drop database if exists ${name} with (force)`)
      await c.end()
    },
  }
}

/**
 * One dialect end to end: ingest into a fresh database (ours, then the
 * baseline on another fresh one), bulk-load to `size`, read latencies, and
 * the ingest run again at that size.
 */
async function runDialect({ dialect, fresh, size, ingestSeconds, runs, connections, quick, ingestOnly, dbPid }) {
  const prefix = dialect === 'postgres' ? 'impressions.pg' : 'impressions'
  const bodies = makeBodies(40, 11)
  const ourDb = await fresh()
  const baseDb = await fresh()
  let service = await startService(ourDb.url)
  try {
    const { projectId, key } = service
    if (!key || !projectId) throw new Error(`no SDK key in the service's log:\n${service.server.output().slice(-2000)}`)
    const environmentId = await productionOf(service.server.url, projectId, key)
    const ingestUrl = `${service.server.url}/api/environments/${environmentId}/impressions`
    await createFlags(service.server.url, environmentId, key)
    await ingestStoresAll(ingestUrl, key, bodies[0])

    log(`${dialect}: ingest, ${connections} connections × ${ingestSeconds} s (after a 2 s warm-up)`)
    await ingestLoad({ url: ingestUrl, key, bodies, duration: 2, connections })
    const cpuBefore = cpuOf(service.server.pid)
    const dbBefore = clusterCpuOf(dbPid?.())
    const loadBefore = process.cpuUsage()
    const ingest = await ingestLoad({ url: ingestUrl, key, bodies, duration: ingestSeconds, connections })
    const cpuAfter = cpuOf(service.server.pid)
    const dbAfter = clusterCpuOf(dbPid?.())
    const load = process.cpuUsage(loadBefore)
    // The service's CPU per 1000 impressions: steadier than the rate on a machine others load too.
    const perK = (key) =>
      cpuBefore && cpuAfter ? (cpuAfter[key] - cpuBefore[key]) / ((ingest.perSecond * ingestSeconds) / 1000) : null
    const rows = (ingest.perSecond * ingestSeconds) / 1000
    const cpu = {
      total: perK('total'),
      main: perK('main'),
      worker: cpuBefore && cpuAfter ? busiestOther(cpuBefore, cpuAfter, service.server.pid) / rows : null,
      load: (load.user + load.system) / 1000 / ((ingest.perSecond * ingestSeconds) / 1000),
      database: dbBefore !== undefined && dbAfter !== undefined ? (dbAfter - dbBefore) / rows : null,
    }
    log(
      `  ours ${Math.round(ingest.perSecond)} impressions/s (p99 ${ingest.p99} ms per request; service CPU ${cpu.total?.toFixed(1)} ms per 1000, main thread ${cpu.main?.toFixed(1)}, busiest other thread ${cpu.worker?.toFixed(1)}${cpu.database === null ? '' : `; PostgreSQL ${cpu.database.toFixed(1)}`}; autocannon ${cpu.load.toFixed(1)})`,
    )
    const baseline = await baselineIngest(baseDb.url, bodies, quick ? 60 : 200)
    log(`  baseline knex ${Math.round(baseline)} rows/s (ours/baseline ${(ingest.perSecond / baseline).toFixed(2)})`)
    await service.server.stop()
    const ingestRow = row({
      id: `${prefix}.ingest_per_s`,
      value: ingest.perSecond,
      unit: 'impressions/s',
      baseline,
      ratio: ingest.perSecond / baseline,
      goal: atLeast(50_000),
      note: `POST …/impressions with the SDK key, batches of ${BATCH} (40 seeded bodies: ${FLAGS} flags, ${USERS} users, 25 % with a context) from autocannon, ${connections} connections × ${ingestSeconds} s into a fresh ${dialect} database through the service CLI (many SDKs posting at once; the service's group commit stores the batches queued meanwhile, up to 5000 rows, in one transaction): validation, interning, rows, unique-user pairs, counters. Baseline: knex inserting the same rows into the same table and indexes, one multi-row insert per batch and transaction, sequential, in-process`,
      extra: {
        p99_request_ms: ingest.p99,
        service_cpu_ms_per_1000: cpu.total,
        main_thread_cpu_ms_per_1000: cpu.main,
        busiest_other_thread_cpu_ms_per_1000: cpu.worker,
        load_generator_cpu_ms_per_1000: cpu.load,
        ...(cpu.database === null ? {} : { database_cpu_ms_per_1000: cpu.database }),
      },
    })
    if (ingestOnly) return [ingestRow]

    log(`${dialect}: bulk-loading to ${size.toLocaleString('en')} impressions`)
    const runtime = await openServiceRuntime({ databaseUrl: ourDb.url })
    try {
      await bulkLoad(runtime.knex, dialect, environmentId, size)
    } finally {
      await runtime.close()
    }
    service = { ...(await startService(ourDb.url)), key, projectId }
    const reader = await openServiceRuntime({ databaseUrl: ourDb.url })
    let reads
    let naiveMs
    try {
      reads = await measureReads({ url: service.server.url, key, environmentId, knex: reader.knex, dialect, runs })
      naiveMs = quick ? null : await naiveStats(reader.knex, environmentId)
    } finally {
      await reader.close()
    }
    for (const [q, r] of Object.entries(reads.list)) {
      log(
        `  list ${q}: ${r.ms.toFixed(2)} ms (p95 ${r.p95.toFixed(2)}; bare select ${r.baseline.toFixed(2)}), total ${r.total}`,
      )
    }
    log(
      `  stats: ${reads.stats.median.toFixed(2)} ms (bare ${reads.statsBase.median.toFixed(2)}); naive GROUP BY ${naiveMs?.toFixed(0)} ms`,
    )

    const scaleSeconds = Math.max(3, Math.round(ingestSeconds / 2))
    const atScale = await ingestLoad({
      url: `${service.server.url}/api/environments/${environmentId}/impressions`,
      key,
      bodies: makeBodies(20, 23),
      duration: scaleSeconds,
      connections,
    })
    log(`  ingest at ${size.toLocaleString('en')}: ${Math.round(atScale.perSecond)} impressions/s`)

    const sizeText = size.toLocaleString('en')
    return [
      ingestRow,
      row({
        id: `${prefix}.list_filtered.ms`,
        value: reads.slowest.ours,
        unit: 'ms',
        baseline: reads.slowest.base,
        ratio: reads.slowest.base / reads.slowest.ours,
        goal: atMost(100),
        note: `GET …/impressions at ${sizeText} stored impressions (${dialect}), the slowest filter's median of ${runs} sequential requests over loopback (it was ${reads.slowest.name}); page of 50 plus total. Baseline: the bare indexed SELECT of that page in-process (no HTTP, auth, total or joins)`,
        extra: { filters: reads.list },
      }),
      row({
        id: `${prefix}.stats.ms`,
        value: reads.stats.median,
        unit: 'ms',
        baseline: reads.statsBase.median,
        ratio: reads.statsBase.median / reads.stats.median,
        goal: atMost(100),
        note: `GET …/impressions/stats (${reads.flags} flags) at ${sizeText} stored impressions (${dialect}), median of ${runs}; p95 ${reads.stats.p95.toFixed(2)} ms. Baseline: the bare SELECT of the same rollup rows in-process. Computing the same stats from the rows (COUNT DISTINCT) took ${naiveMs === null ? 'not measured (quick)' : `${Math.round(naiveMs)} ms`}`,
        extra: { naive_group_by_ms: naiveMs, p95: reads.stats.p95 },
      }),
      row({
        id: `${prefix}.ingest_at_5m_per_s`,
        value: atScale.perSecond,
        unit: 'impressions/s',
        baseline: null,
        ratio: null,
        note: `the ingest run (${connections} connections × ${scaleSeconds} s) again on the database holding ${sizeText} impressions: random-key index pages (users) no longer fit the cache`,
      }),
    ]
  } finally {
    await service.server.stop()
    await ourDb.drop()
    await baseDb.drop()
  }
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const size = quick ? 500_000 : 5_000_000
  const ingestOnly = process.argv.includes('--ingest-only') || process.env.BENCH_IMPRESSIONS_INGEST_ONLY === '1'
  const only =
    process.argv.find((a) => a.startsWith('--dialect='))?.slice('--dialect='.length) ??
    process.env.BENCH_IMPRESSIONS_DIALECT
  const settings = { size, ingestSeconds: quick ? 4 : 6, runs: quick ? 15 : 25, quick, ingestOnly }
  const results = []
  if (only !== 'postgres') {
    const sqliteDir = tempDir('impressions')
    let n = 0
    try {
      const fresh = async () => {
        const url = `sqlite:${join(sqliteDir.dir, `db${n++}.sqlite`)}`
        return { url, drop: async () => {} }
      }
      results.push(...(await runDialect({ dialect: 'sqlite', fresh, connections: 32, ...settings })))
    } finally {
      sqliteDir.remove()
    }
  }
  if (only === 'sqlite') return results

  const cluster = await startPostgres().catch((error) => {
    log(`PostgreSQL not started: ${error.message}`)
    return undefined
  })
  if (!cluster) {
    log('PostgreSQL: no FLAGSYNC_PG_URL and no server binaries; the .pg rows are not run')
    return results
  }
  try {
    results.push(
      ...(await runDialect({
        dialect: 'postgres',
        fresh: () => createPgDatabase(cluster.url),
        dbPid: cluster.pid,
        connections: 32,
        ...settings,
      })),
    )
  } finally {
    cluster.stop()
  }
  return results
}

benchMain(import.meta.url, run)
