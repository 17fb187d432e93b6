import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import pg from 'pg'
import { expect } from 'vitest'

/** Helpers for suites that run the service's CLI as real processes on one database. */

const CLI = 'packages/flag-service/dist/cli.js'
const ADMIN = { email: 'admin@example.com', password: 'correct horse battery' }

function serviceEnv(databaseUrl: string): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    WORKSPACE_NAME: 'Acme',
    DASHBOARD_DIR: 'off',
    SCHEDULE_POLL_MS: '200',
  }
}

export const startService = (databaseUrl: string): Promise<SpawnedServer> =>
  spawnServer(CLI, serviceEnv(databaseUrl), 30_000)

/** A logged-in admin of a service process: JSON calls with the session cookie and the CSRF header. */
export async function adminOf(url: string) {
  const login = await fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(ADMIN),
  })
  expect(login.status).toBe(200)
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  return async (base: string, path: string, method = 'GET', body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { Cookie: cookie, 'X-Service-Request': 'true', 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }
}

export type AdminCall = Awaited<ReturnType<typeof adminOf>>

/**
 * `projects` new projects with `perProject` flags `f0`, `f1`, … in their Production environment (one sync batch
 * each); answers the environment ids. Spread so that each write's environment checks read a modest environment.
 */
export async function seedEnvironments(call: AdminCall, url: string, projects: number, perProject: number) {
  const envs: string[] = []
  for (let p = 0; p < projects; p++) {
    const project = await call(url, '/api/projects', 'POST', { name: `Load ${p}` })
    expect(project.status, JSON.stringify(project.body)).toBe(200)
    const list = (await call(url, `/api/projects/${project.body.id}/environments`)).body as Array<{
      id: string
      slug: string
    }>
    const env = list.find((e) => e.slug === 'production')?.id as string
    const operations = Array.from({ length: perProject }, (_, i) => ({
      action: 'insert',
      collection: 'flags',
      recordId: `f${i}`,
      record: { is_enabled: false },
    }))
    const res = await call(url, `/api/environments/${env}/sync`, 'POST', { batchId: `seed-${p}`, operations })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    envs.push(env)
  }
  return envs
}

/**
 * One pending schedule per flag of `envs`, turning it on, due at `runAt` + up to 999 ms (all within one second),
 * written straight into the table as the create route writes them (its base the flag's revision), so that a
 * thousand of them are in place well before they are due whatever the machine's load.
 */
export function insertSchedules(databaseUrl: string, envs: string[], runAt: number): Promise<number> {
  return withClient(databaseUrl, async (client) => {
    const inserted = await client.query(
      `insert into flagsync_schedules (environment_id, flag_key, patch, run_at, status, created_by, created_by_actor,
         created_by_user_id, base_revision, created_at)
       select f.scope, f.key, '{"is_enabled":true}', $2::bigint + (row_number() over (order by f.scope, f.key)) % 1000,
         'pending', u.email, u.email, u.id, f.revision, $3::bigint
       from flagsync_flags f cross join (select id, email from flagsync_users order by id limit 1) u
       where f.scope = any($1::text[])`,
      [envs, runAt, Date.now()],
    )
    // A webhook per project subscribed to schedule.applied: one outbox row per application, so a schedule applied
    // twice shows even where the second write changes nothing (a merge patch applied again is a no-op).
    await client.query(
      `insert into flagsync_webhooks (id, project_id, url, events, secret, enabled, created_at, updated_at)
       select md5(e.project_id), e.project_id, 'http://127.0.0.1:9/hook', '["schedule.applied"]', 'whsec_test', true,
         $2::bigint, $2::bigint
       from flagsync_environments e where e.id = any($1::text[])`,
      [envs, Date.now()],
    )
    return inserted.rowCount ?? 0
  })
}

export interface Tally {
  byStatus: Record<string, number>
  /** Change-log rows per schedule: on its flag, with its source (`schedule:12`, `schedule:12 approved by …`). */
  changesPerSchedule: Map<number, number>
  /** Every change-log row a schedule wrote. */
  scheduleChanges: number
  /** `schedule.applied` webhook events per schedule id. */
  eventsPerSchedule: Map<number, number>
  lateMs: number[]
}

/** One short-lived client for a few queries. */
async function withClient<T>(databaseUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/** Schedules by status: the cheap reading polled while they run. */
async function statusCounts(client: pg.Client): Promise<Record<string, number>> {
  const statuses = await client.query('select status, count(*)::int as n from flagsync_schedules group by status')
  return Object.fromEntries(statuses.rows.map((r: { status: string; n: number }) => [r.status, r.n]))
}

/** Reads the schedules' outcomes and the change-log rows and events they wrote straight from the database. */
async function tally(client: pg.Client): Promise<Tally> {
  const perSchedule = await client.query(
    `select s.id, count(c.revision)::int as n from flagsync_schedules s
       left join flagsync_changes c on c.scope = s.environment_id and c.key = s.flag_key
         and c.source ~ ('^schedule:' || s.id || '( |$)')
     group by s.id`,
  )
  const all = await client.query(`select count(*)::int as n from flagsync_changes where source like 'schedule:%'`)
  const results = await client.query(`select result from flagsync_schedules where status = 'applied'`)
  const events = await client.query(
    `select (payload::json->'data'->>'schedule_id')::int as id, count(*)::int as n
       from flagsync_webhook_deliveries where event_type = 'schedule.applied' group by 1`,
  )
  return {
    byStatus: await statusCounts(client),
    changesPerSchedule: new Map(perSchedule.rows.map((r: { id: number; n: number }) => [r.id, r.n])),
    scheduleChanges: (all.rows[0] as { n: number }).n,
    eventsPerSchedule: new Map(events.rows.map((r: { id: number; n: number }) => [r.id, r.n])),
    lateMs: results.rows.map((r: { result: string }) => (JSON.parse(r.result) as { late_ms: number }).late_ms),
  }
}

/**
 * Polls the status counts until no schedule is pending (or `timeoutMs` passed), `onCounts` seeing each reading,
 * then tallies the outcome once.
 */
export async function untilSettled(
  databaseUrl: string,
  timeoutMs: number,
  onCounts: (byStatus: Record<string, number>) => void = () => {},
): Promise<Tally> {
  const deadline = Date.now() + timeoutMs
  return withClient(databaseUrl, async (client) => {
    for (;;) {
      const byStatus = await statusCounts(client)
      onCounts(byStatus)
      if (!byStatus.pending || Date.now() > deadline) return tally(client)
      await new Promise((r) => setTimeout(r, 50))
    }
  })
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN
}
