// dashboard.flags1000.render_ms: the flag service's dashboard (its Vite build, served by the service CLI on SQLite)
// showing a project's flags page with 1 000 flags × 4 environments in Debian's Chromium (playwright-core). The page
// is loaded once online, so the persister saves the stream's flags; then it is reloaded with the stream blocked
// (`Network.setBlockedURLs`), so the flags can come only from the persisted cache (the REST reads of the session,
// projects and environments are answered, after the first render, which uses their cached copies too). A
// MutationObserver installed before the page's scripts (`addInitScript`) records `performance.now()` when the table
// is in the DOM with its first screen of rows (the table renders only the rows near the screen, `row-window.ts`;
// its aria-rowcount says 1 001): navigation start → table, median of the reloads.
// dashboard.flags1000.update_p50_ms / update_p95_ms: with the stream live, a flag's description changed through the
// REST API (PATCH), a flag of the first screen; the page's EventSource listeners are wrapped (same init script) to stamp the `update` event's
// arrival before the app handles it, and the observer stamps the moment that row's description shows the new text:
// arrival → DOM, p50 and p95 over the updates.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { atMost, benchMain, log, row } from './lib/cli.mjs'
import { startCli } from './lib/proc.mjs'
import { median, percentile, sleep } from './lib/stats.mjs'

const SERVICE_CLI = 'packages/flag-service/dist/cli.js'
const CHROMIUM_PATH = '/usr/bin/chromium'
const ADMIN = { email: 'bench@example.com', password: 'bench-password-1' }
const FLAGS = 1000
/** More rows than the 1280×860 viewport shows (checked on every load): the table's first screen. */
const SCREEN_ROWS = 20

/** JSON calls as the logged-in admin; resolves the session cookie too. */
async function adminOf(url) {
  const login = await fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(ADMIN),
  })
  if (login.status !== 200) throw new Error(`login: ${login.status}`)
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  const call = async (path, method = 'GET', body) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { Cookie: cookie, 'X-Service-Request': 'true', 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
    return res.json()
  }
  return { call, cookie }
}

/** A flag of the seeded set: every other one has a rule, all have a rollout and a description (what a cell shows). */
const flagRecord = (i) => ({
  is_enabled: i % 3 !== 0,
  rollout_percentage: (i * 7) % 101,
  description: `Seeded flag ${i} #bench`,
  rules: i % 2 ? [{ attribute: 'country', operator: 'equals', values: ['NL', 'BE'], variant: false }] : [],
})

/** The project's four environments (the three seeded and one more), each with the same FLAGS flags. */
async function seed(call) {
  const [project] = await call('/api/projects')
  await call(`/api/projects/${project.id}/environments`, 'POST', { name: 'QA' })
  const envs = await call(`/api/projects/${project.id}/environments`)
  for (const env of envs) {
    const operations = Array.from({ length: FLAGS }, (_, i) => ({
      action: 'insert',
      collection: 'flags',
      recordId: `flag-${String(i).padStart(4, '0')}`,
      record: flagRecord(i),
    }))
    await call(`/api/environments/${env.id}/sync`, 'POST', { batchId: `bench-${env.id}`, operations })
  }
  return { projectId: project.id, envIds: envs.map((e) => e.id) }
}

// In the page before its scripts: the table's stamp (its first screen of rows in the DOM, with the row count of all
// FLAGS: the table renders only the rows near the screen), and the stream update's arrival and its row's change.
const INIT = `(() => {
  const bench = (window.__bench = { full: null, first: null, dcl: null, arrivals: {}, shown: {}, watch: null })
  document.addEventListener('DOMContentLoaded', () => { bench.dcl = performance.now() })
  const rows = () => document.querySelectorAll('table.flags tbody tr[data-flag]').length
  new MutationObserver(() => {
    const n = rows()
    if (bench.first === null && n > 0) bench.first = performance.now()
    const table = document.querySelector('table.flags')
    if (bench.full === null && n >= ${SCREEN_ROWS} && table?.getAttribute('aria-rowcount') === '${FLAGS + 1}')
      bench.full = performance.now()
    const w = bench.watch
    if (w && bench.shown[w.text] === undefined) {
      const desc = document.querySelector('tr[data-flag="' + w.key + '"] .flag-desc')
      if (desc && desc.textContent === w.text) bench.shown[w.text] = performance.now()
    }
  }).observe(document, { childList: true, subtree: true, characterData: true })
  const add = EventSource.prototype.addEventListener
  EventSource.prototype.addEventListener = function (type, listener, options) {
    if (type !== 'update') return add.call(this, type, listener, options)
    const wrapped = function (event) {
      const w = bench.watch
      if (w && bench.arrivals[w.text] === undefined && String(event.data).includes(w.text)) bench.arrivals[w.text] = performance.now()
      return listener.call(this, event)
    }
    return add.call(this, type, wrapped, options)
  }
})()`

/** The stream's URL, the one request a cached render must go without. */
const STREAM = /^\/stream$/

/**
 * Reloads with nothing from the network but the page's own files; resolves navigation start → full table (ms).
 * The stream is blocked by Chromium itself (`Network.setBlockedURLs`), not by `page.route`: Playwright's routing
 * pauses every request of the page for the Node process to answer and disables the HTTP cache, so a reload would
 * fetch and compile every script anew, which no browser's reload does. Checked: the stream's request fails and
 * none is answered. With BENCH_PROFILE=<dir>, writes a Chromium CPU profile of the load there.
 */
async function cachedRender(page, url, i) {
  const blocker = await page.context().newCDPSession(page)
  await blocker.send('Network.enable')
  await blocker.send('Network.setBlockedURLs', { urls: ['*/stream?*', '*/stream'] })
  const streams = { failed: 0, answered: 0 }
  const onFailed = (request) => STREAM.test(new URL(request.url()).pathname) && streams.failed++
  const onResponse = (response) => STREAM.test(new URL(response.url()).pathname) && streams.answered++
  page.on('requestfailed', onFailed)
  page.on('response', onResponse)
  const cdp = process.env.BENCH_PROFILE ? await page.context().newCDPSession(page) : null
  try {
    if (cdp) await cdp.send('Profiler.enable').then(() => cdp.send('Profiler.start'))
    await page.goto(url)
    await page
      .waitForFunction(() => window.__bench.full !== null, undefined, { timeout: 30_000 })
      .catch(async (e) => {
        const state = await page.evaluate(() => ({
          rows: document.querySelectorAll('table.flags tbody tr[data-flag]').length,
          text: document.body.innerText.slice(0, 300),
          cache: localStorage.getItem('flagsync.dashboard.cache')?.length ?? 0,
        }))
        throw new Error(`${e.message}: ${JSON.stringify(state)}`)
      })
    if (cdp) {
      const { profile } = await cdp.send('Profiler.stop')
      const file = join(process.env.BENCH_PROFILE ?? '', `dashboard-render-${i}.cpuprofile`)
      writeFileSync(file, JSON.stringify(profile))
    }
    const b = await page.evaluate(() => window.__bench)
    const fills = await page.evaluate(
      (n) =>
        document.querySelectorAll('table.flags tbody tr[data-flag]')[n - 1].getBoundingClientRect().bottom >
        innerHeight,
      SCREEN_ROWS,
    )
    if (!fills) throw new Error(`${SCREEN_ROWS} rows do not fill the viewport: raise SCREEN_ROWS`)
    if (streams.failed === 0 || streams.answered > 0)
      throw new Error(`the stream was not blocked: ${JSON.stringify(streams)}`)
    log(`  DOMContentLoaded ${b.dcl?.toFixed(1)} ms, table ${b.full.toFixed(1)} ms`)
    return { full: b.full, dcl: b.dcl ?? Number.NaN }
  } finally {
    await cdp?.detach()
    page.off('requestfailed', onFailed)
    page.off('response', onResponse)
    await blocker.send('Network.setBlockedURLs', { urls: [] })
    await blocker.detach()
  }
}

/** One PATCH through the REST API while the page is live; resolves the page's event arrival → row shown (ms). */
async function liveUpdate(page, call, envId, i) {
  // A row on the first screen: the table renders the rows near the screen only.
  const key = `flag-${String((i * 7) % 15).padStart(4, '0')}`
  const text = `bench update ${i} ${Date.now()}`
  await page.evaluate(
    (w) => {
      window.__bench.watch = w
    },
    { key, text },
  )
  await call(`/api/environments/${envId}/flags/${key}`, 'PATCH', { description: text })
  await page.waitForFunction((t) => window.__bench.shown[t] !== undefined, text, { timeout: 15_000 })
  return page.evaluate((t) => window.__bench.shown[t] - window.__bench.arrivals[t], text)
}

export async function run({ quick }) {
  const loads = quick ? 3 : 7
  const updates = quick ? 10 : 40
  const server = await startCli(SERVICE_CLI, {
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    WORKSPACE_NAME: 'Bench',
  })
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH })
  try {
    const { call, cookie } = await adminOf(server.url)
    const { projectId, envIds } = await seed(call)
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
    const [name, value] = cookie.split('=')
    await context.addCookies([{ name, value, url: server.url }])
    await context.addInitScript(INIT)
    const page = await context.newPage()
    const url = `${server.url}/projects/${projectId}`
    // Online first: the stream's bootstrap fills the table and the persister saves it (throttled, 200 ms).
    await page.goto(url)
    await page.waitForFunction(() => window.__bench.full !== null, undefined, { timeout: 60_000 })
    await page.locator('#live-status[data-state="live"]').waitFor({ timeout: 30_000 })
    await sleep(1000)
    const cacheChars = await page.evaluate(() => localStorage.getItem('flagsync.dashboard.cache')?.length ?? 0)
    log(`persisted cache: ${cacheChars} characters`)
    const renders = []
    const afterDcl = []
    for (let i = 0; i < loads; i++) {
      const { full, dcl } = await cachedRender(page, url, i)
      renders.push(full)
      afterDcl.push(full - dcl)
    }
    // Live again: a normal load, then the updates one at a time.
    await page.goto(url)
    await page.locator('#live-status[data-state="live"]').waitFor({ timeout: 30_000 })
    // The table renders the rows near the screen: the last flag is there once the page is scrolled to the end.
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight))
    await page.locator(`tr[data-flag="flag-${String(FLAGS - 1).padStart(4, '0')}"]`).waitFor({ timeout: 10_000 })
    await page.evaluate(() => window.scrollTo(0, 0))
    const lags = []
    // The row's description is its first environment's: the updates go there.
    for (let i = 0; i < updates; i++) lags.push(await liveUpdate(page, call, envIds[0], i))
    log(`update lags: ${lags.map((x) => x.toFixed(1)).join(' ')}`)
    const p50 = percentile(lags, 50)
    const p95 = percentile(lags, 95)
    const setup = `${FLAGS} flags × ${envIds.length} environments, flag service CLI on SQLite, Chromium 1280×860`
    return [
      row({
        id: 'dashboard.flags1000.render_ms',
        value: median(renders),
        unit: 'ms',
        baseline: null,
        ratio: null,
        goal: atMost(200),
        note: `navigation start → the flags table in the DOM with its first screen of rows (${SCREEN_ROWS}, more than the viewport shows; the table renders the rows near the screen, aria-rowcount ${FLAGS + 1}), from the persisted cache (the stream blocked); ${setup}; median of ${loads} reloads (min ${Math.min(...renders).toFixed(1)}, max ${Math.max(...renders).toFixed(1)}); of which DOMContentLoaded (the bundle loaded and run) → table ${median(afterDcl).toFixed(1)} ms (median): the cache restored and the table rendered`,
        extra: { renders, afterDcl },
      }),
      ...[
        ['p50', p50],
        ['p95', p95],
      ].map(([which, figure]) =>
        row({
          id: `dashboard.flags1000.update_${which}_ms`,
          value: /** @type {number} */ (figure),
          unit: `ms ${which}`,
          baseline: null,
          ratio: null,
          goal: atMost(50),
          note: `a flag's description PATCHed through the REST API: the stream's update event arriving in the page → that row showing it; ${setup}; ${which} of ${updates} updates`,
          extra: { lags },
        }),
      ),
    ]
  } finally {
    await browser.close()
    await server.stop()
  }
}

benchMain(import.meta.url, run)
