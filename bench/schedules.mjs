// schedule.fire1000.p99_ms: 1 000 scheduled flag changes due within the same second, each on its own flag, applied by
// the flag service's CLI on SQLite (its default database); the figure is the p99 of their lateness, each one's
// applied time minus its run_at as the service records it (`result.late_ms`). The schedules are written into the
// table shortly before they are due, as the create route writes them (the route's own cost is not what is measured).
import { join } from 'node:path'
import knex from 'knex'
import { atMost, benchMain, log, row } from './lib/cli.mjs'
import { startCli, tempDir } from './lib/proc.mjs'
import { median, percentile, sleep } from './lib/stats.mjs'

const SERVICE_CLI = 'packages/flag-service/dist/cli.js'
const ADMIN = { email: 'bench@example.com', password: 'bench-password-1' }
const COUNT = 1000

/** JSON calls as the logged-in admin. */
async function adminOf(url) {
  const login = await fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(ADMIN),
  })
  if (login.status !== 200) throw new Error(`login: ${login.status}`)
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]
  return async (path, method = 'GET', body) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { Cookie: cookie, 'X-Service-Request': 'true', 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
    return res.json()
  }
}

/** One round: a fresh database, COUNT flags, COUNT schedules due in one second; resolves their lateness (ms). */
async function fire(dir, round) {
  const file = join(dir, `round-${round}.sqlite`)
  const server = await startCli(SERVICE_CLI, {
    DATABASE_URL: `sqlite:${file}`,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    WORKSPACE_NAME: 'Bench',
    DASHBOARD_DIR: 'off',
  })
  const db = knex({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true })
  try {
    const call = await adminOf(server.url)
    const [project] = await call('/api/projects')
    const envs = await call(`/api/projects/${project.id}/environments`)
    const env = envs.find((e) => e.slug === 'production').id
    const operations = Array.from({ length: COUNT }, (_, i) => ({
      action: 'insert',
      collection: 'flags',
      recordId: `flag-${i}`,
      record: { is_enabled: false },
    }))
    await call(`/api/environments/${env}/sync`, 'POST', { batchId: `bench-${round}`, operations })
    const user = await db('flagsync_users').first('id', 'email')
    const heads = await db('flagsync_flags').where('scope', env).select('key', 'revision')
    const runAt = Math.ceil((Date.now() + 3000) / 1000) * 1000
    const rows = heads.map((h, i) => ({
      environment_id: env,
      flag_key: h.key,
      patch: '{"is_enabled":true}',
      run_at: runAt + (i % 1000),
      status: 'pending',
      created_by: user.email,
      created_by_actor: user.email,
      created_by_user_id: user.id,
      base_revision: h.revision,
      created_at: Date.now(),
    }))
    for (let i = 0; i < rows.length; i += 100) await db('flagsync_schedules').insert(rows.slice(i, i + 100))
    for (;;) {
      await sleep(200)
      const pending = await db('flagsync_schedules').where('status', 'pending').count({ n: '*' }).first()
      if (Number(pending.n) === 0) break
      if (Date.now() > runAt + 120_000) throw new Error(`${pending.n} schedules still pending after 2 minutes`)
    }
    const done = await db('flagsync_schedules').select('status', 'result')
    const failed = done.filter((d) => d.status !== 'applied')
    if (failed.length > 0) throw new Error(`${failed.length} schedules not applied: ${failed[0].result}`)
    return done.map((d) => JSON.parse(d.result).late_ms)
  } finally {
    await db.destroy()
    await server.stop()
  }
}

async function run({ quick }) {
  const tmp = tempDir('schedules')
  try {
    const rounds = quick ? 1 : 3
    const p99s = []
    const p50s = []
    for (let round = 0; round < rounds; round++) {
      const late = await fire(tmp.dir, round)
      p99s.push(percentile(late, 99))
      p50s.push(percentile(late, 50))
      log(`schedules round ${round + 1}: lateness p50 ${p50s.at(-1)} ms, p99 ${p99s.at(-1)} ms`)
    }
    return [
      row({
        id: 'schedule.fire1000.p99_ms',
        value: median(p99s),
        unit: 'ms',
        baseline: null,
        ratio: null,
        goal: atMost(1000),
        note: `${COUNT} schedules, each turning its own flag on, due within one second, applied by one flag service CLI on SQLite (claim, write and status in one flag-store transaction per batch of up to 50); lateness = applied time - run_at as the service records it; median of ${rounds} round(s) of the p99; p50 ${median(p50s)} ms`,
        extra: { p99Ms: p99s, p50Ms: p50s },
      }),
    ]
  } finally {
    tmp.remove()
  }
}

benchMain(import.meta.url, run)
