// webhook.deliver.ratio: events delivered per second by the flag service's CLI (SQLite) to a local receiver, against
// a bare loop in this process POSTing the same bodies to the same receiver with the same concurrency (fetch,
// keep-alive), in the same run. The events are one /sync batch of new flags: one transaction writes them and their
// outbox rows; the clock runs from the batch's answer to the last delivery.
// webhook.lag.p99_ms: flags changed one at a time (PATCH); a change's lag is its arrival at the receiver minus its
// change-log row's created_at (stamped just before the commit, on the same machine).
import { createServer } from 'node:http'
import knex from 'knex'
import { atLeast, atMost, benchMain, log, row } from './lib/cli.mjs'
import { cpuMicros, startCli, tempDir } from './lib/proc.mjs'
import { median, percentile, sleep } from './lib/stats.mjs'

const SERVICE_CLI = 'packages/flag-service/dist/cli.js'
const ADMIN = { email: 'bench@example.com', password: 'bench-password-1' }
const CONCURRENCY = 16

/** A receiver answering 204 at once; records each webhook-id's first arrival time. */
async function startReceiver() {
  const arrivals = new Map()
  let requests = 0
  let connections = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      requests++
      const id = req.headers['webhook-id']
      if (id && !arrivals.has(id)) arrivals.set(id, Date.now())
      res.writeHead(204).end()
    })
  })
  server.on('connection', () => connections++)
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    arrivals,
    requests: () => requests,
    connections: () => connections,
    close: () => new Promise((resolve) => server.close(resolve)),
  }
}

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

/** Waits until `count` distinct webhook-ids arrived; resolves the time the last one did. */
async function delivered(receiver, count, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs
  while (receiver.arrivals.size < count) {
    if (Date.now() > deadline) throw new Error(`${receiver.arrivals.size} of ${count} deliveries after ${timeoutMs} ms`)
    await sleep(2)
  }
  return Math.max(...receiver.arrivals.values())
}

/** The baseline: the same bodies POSTed by a bare loop, CONCURRENCY at a time; events per second. */
async function bareLoop(url, bodies) {
  let next = 0
  const started = performance.now()
  const lane = async () => {
    while (next < bodies.length) {
      const body = bodies[next++]
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      await res.arrayBuffer()
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, lane))
  return bodies.length / ((performance.now() - started) / 1000)
}

async function run({ quick }) {
  const tmp = tempDir('webhooks')
  const file = `${tmp.dir}/service.sqlite`
  const receiver = await startReceiver()
  const server = await startCli(SERVICE_CLI, {
    DATABASE_URL: `sqlite:${file}`,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    WORKSPACE_NAME: 'Bench',
    DASHBOARD_DIR: 'off',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_CONCURRENCY: String(CONCURRENCY),
  })
  const db = knex({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true })
  try {
    const call = await adminOf(server.url)
    const [project] = await call('/api/projects')
    const envs = await call(`/api/projects/${project.id}/environments`)
    const env = envs.find((e) => e.slug === 'production').id
    await call(`/api/projects/${project.id}/webhooks`, 'POST', { url: receiver.url, events: ['*'] })

    // Throughput: one batch of new flags, each a flag.created event.
    const count = quick ? 500 : 1000
    const operations = Array.from({ length: count }, (_, i) => ({
      action: 'insert',
      collection: 'flags',
      recordId: `flag-${i}`,
      record: { is_enabled: false },
    }))
    await call(`/api/environments/${env}/sync`, 'POST', { batchId: 'bench-deliver', operations })
    const started = Date.now()
    const cpuBefore = cpuMicros(server.pid)
    const connectionsBefore = receiver.connections()
    const last = await delivered(receiver, count)
    const ours = count / ((last - started) / 1000)
    // CPU time of the service per delivery: what the machine's load skews least.
    const cpuPerDelivery = (cpuMicros(server.pid) - cpuBefore) / count
    const connections = receiver.connections() - connectionsBefore
    const bodies = (await db('flagsync_webhook_deliveries').select('payload')).map((r) => r.payload)
    const baseline = await bareLoop(receiver.url, bodies)
    log(
      `webhooks: ${ours.toFixed(0)} deliveries/s (${cpuPerDelivery.toFixed(0)} µs of service CPU each, ${connections} connections), bare loop ${baseline.toFixed(0)} POSTs/s`,
    )

    // Lag: changes one at a time, a little apart, each delivered before the next is written.
    const changes = quick ? 100 : 400
    const before = receiver.arrivals.size
    for (let i = 0; i < changes; i++) {
      await call(`/api/environments/${env}/flags/flag-${i}`, 'PATCH', { description: `change ${i}` })
      await delivered(receiver, before + i + 1)
      await sleep(5)
    }
    const rows = await db({ d: 'flagsync_webhook_deliveries' })
      .where('d.event_type', 'flag.updated')
      .select('d.id', 'd.payload')
    const lags = []
    for (const r of rows) {
      const revision = JSON.parse(r.payload).data.revision
      const change = await db('flagsync_changes').where('revision', revision).first('created_at')
      lags.push(receiver.arrivals.get(r.id) - Number(change.created_at))
    }
    const unique = receiver.arrivals.size
    return [
      row({
        id: 'webhook.deliver.ratio',
        value: ours,
        unit: 'events/s',
        baseline,
        ratio: ours / baseline,
        goal: atLeast(0.5, 'ratio'),
        note: `${count} flag.created events of one /sync batch, signed and sent by one flag service CLI on SQLite (${CONCURRENCY} at a time over ${connections} kept-alive connections, claimed and recorded in batches; ${cpuPerDelivery.toFixed(0)} µs of service CPU per delivery) to a local receiver answering 204; baseline: a bare fetch loop POSTing the same ${count} bodies, ${CONCURRENCY} at a time, to the same receiver; ${receiver.requests()} requests for ${unique} webhook-ids`,
      }),
      row({
        id: 'webhook.lag.p99_ms',
        value: percentile(lags, 99),
        unit: 'ms',
        baseline: null,
        ratio: null,
        goal: atMost(250),
        note: `${changes} PATCHes one at a time; lag = arrival at the receiver - the change-log row's created_at; p50 ${median(lags)} ms`,
      }),
    ]
  } finally {
    await db.destroy()
    await server.stop()
    await receiver.close()
    tmp.remove()
  }
}

benchMain(import.meta.url, run)
