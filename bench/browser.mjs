// The client where users run it: Debian's Chromium (playwright-core, never a downloaded browser) loading the SHIPPED
// browser bundle (packages/sync-client/dist/bundle/sync-client.browser.min.js, from `npm run build`) in a page served
// by the flat API CLI (CONSOLE_DIR = a temp folder holding bench/browser/* and the bundle). Every figure is measured
// against its baseline in the same page and run:
//   browser.enqueue.ratio    sequential awaited update() vs raw IndexedDB add, one read-write transaction each
//   browser.drain500.ratio   flush() of 50 000 queued inserts at batchSize 500 to the flat API's /sync vs raw
//                            IndexedDB reading and deleting the same rows, 500 per read-write transaction
//   browser.enqueue.{relaxed,strict,default}.ops_per_s, browser.drain500.{relaxed,strict}.ops_per_s: the same with
//                            the client's durability option and the raw transactions' hint set to each mode
//   browser.durability.strict_cost: relaxed ÷ strict enqueue rate, ours and raw
//   browser.compaction.ops_per_s / browser.eval.ops_per_s: compact() / evaluate() in the page vs their bare baselines
//   browser.cold_start.ms    offline page load with 1 000 cached flags and 1 000 queued edits → first getFlag, the
//                            page's files content-hashed and immutable, the bundle preloaded, the cache in
//                            localStorage (default); browser.cold_start.indexeddb_ms: the cache in IndexedDB;
//                            browser.cold_start.revalidated_ms: the page's files revalidated on each load
// BENCH_PROFILE=<dir> also writes a Chromium CPU profile (DevTools protocol) of each measurement there.
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'esbuild'
import { chromium } from 'playwright-core'
import { atLeast, atMost, benchMain, log, row } from './lib/cli.mjs'
import { makeFlag, seedFlags } from './lib/flags.mjs'
import { benchDir, FLAT_API_CLI, repoRoot, startCli, tempDir } from './lib/proc.mjs'
import { median, now } from './lib/stats.mjs'

const CHROMIUM_PATH = '/usr/bin/chromium'
const BUNDLE = join(repoRoot, 'packages/sync-client/dist/bundle/sync-client.browser.min.js')
const PAGE_FILES = ['index.html', 'harness.js', 'cold.js']
const COLD_FLAGS = 1000
const COLD_OPS = 1000
/** The sync client's default `durability` (packages/sync-client/src/durability.ts). */
const CLIENT_DURABILITY = 'relaxed'
/** Every mode of the client's `durability` option, each measured against raw IndexedDB with the same hint. */
const DURABILITY_MODES = /** @type {const} */ (['relaxed', 'strict', 'default'])

/** @param {number[]} runs */
const spread = (runs) => {
  const r = runs.map((x) => (x >= 100 ? Math.round(x).toLocaleString('en') : x.toFixed(2)))
  return runs.length > 1
    ? `min/median/max ${[Math.min(...runs), median(runs), Math.max(...runs)].map((x) => (x >= 100 ? Math.round(x).toLocaleString('en') : x.toFixed(2))).join('/')} of ${runs.length}`
    : `one run (${r[0]})`
}

/** The served folder: the pages, their scripts, the shipped bundle and the evaluator + workloads bundled by esbuild. */
async function servedDir() {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run npm run build first`)
  const dir = tempDir('browser')
  for (const file of PAGE_FILES) copyFileSync(join(benchDir, 'browser', file), join(dir.dir, file))
  copyFileSync(BUNDLE, join(dir.dir, 'sync-client.browser.min.js'))
  // The cold-start page as a built app ships it: module and bundle in assets/ under content-hashed names, which the
  // flat API serves immutable. cold-revalidated.html loads the unhashed copies at the root (revalidated each load).
  const bundle = readFileSync(BUNDLE)
  const bundleName = `sync-client-${contentHash(bundle)}.js`
  const coldJs = readFileSync(join(benchDir, 'browser/cold.js'), 'utf8')
  const hashedJs = coldJs.replace("from './sync-client.browser.min.js'", `from './${bundleName}'`)
  if (hashedJs === coldJs) throw new Error('bench/browser/cold.js no longer imports ./sync-client.browser.min.js')
  const moduleName = `cold-${contentHash(hashedJs)}.js`
  mkdirSync(join(dir.dir, 'assets'))
  writeFileSync(join(dir.dir, 'assets', bundleName), bundle)
  writeFileSync(join(dir.dir, 'assets', moduleName), hashedJs)
  const template = readFileSync(join(benchDir, 'browser/cold.html'), 'utf8')
  const page = (/** @type {string} */ bundlePath, /** @type {string} */ modulePath) =>
    template.replace('__BUNDLE__', bundlePath).replace('__MODULE__', modulePath)
  writeFileSync(join(dir.dir, 'cold.html'), page(`assets/${bundleName}`, `assets/${moduleName}`))
  writeFileSync(join(dir.dir, 'cold-revalidated.html'), page('sync-client.browser.min.js', 'cold.js'))
  await build({
    entryPoints: [join(benchDir, 'browser/entry.mjs')],
    outfile: join(dir.dir, 'workloads.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    logLevel: 'error',
  })
  writeFileSync(join(dir.dir, 'favicon.ico'), '')
  return { ...dir, bundleBytes: bundle.length }
}

/** The first 8 hex digits of the content's SHA-256, as a bundler names its output. @param {string | Buffer} content */
const contentHash = (content) => createHash('sha256').update(content).digest('hex').slice(0, 8)

/**
 * Runs `fn`, under the DevTools protocol's CPU profiler when BENCH_PROFILE is set.
 * @template T
 * @param {import('playwright-core').Page} page @param {string} name @param {() => Promise<T>} fn
 */
async function profiled(page, name, fn) {
  const dir = process.env.BENCH_PROFILE
  if (!dir) return fn()
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('Profiler.enable')
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 })
  await cdp.send('Profiler.start')
  try {
    return await fn()
  } finally {
    const { profile } = await cdp.send('Profiler.stop')
    writeFileSync(join(dir, `browser-${name}.cpuprofile`), JSON.stringify(profile))
    await cdp.detach()
  }
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const sizes = {
    enqueue: quick ? 500 : 3000,
    enqueueRuns: quick ? 3 : 5,
    enqueueModes: quick ? 300 : 1000,
    drain: quick ? 5000 : 50_000,
    compaction: quick ? 200_000 : 1_000_000,
    compactionRounds: quick ? 3 : 5,
    evalMs: quick ? 300 : 1000,
    coldRuns: quick ? 3 : 7,
  }
  const served = await servedDir()
  const server = await startCli(FLAT_API_CLI, { CONSOLE_DIR: served.dir })
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--js-flags=--expose-gc', // a full GC before each compaction pass, as in Node
    ],
  })
  /** @type {string[]} */
  const errors = []
  try {
    await seedFlags(
      server.url,
      Array.from({ length: COLD_FLAGS }, (_, i) => makeFlag(i)),
    )
    const context = await browser.newContext()
    const page = await context.newPage()
    page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(`console: ${m.text()}`)
    })
    const check = () => {
      if (errors.length) throw new Error(`the page failed:\n${errors.join('\n')}`)
    }
    await page.goto(`${server.url}/index.html`)
    await page.waitForFunction(() => /** @type {any} */ (window).bench !== undefined, null, { timeout: 20_000 })
    const userAgent = await page.evaluate(() => /** @type {any} */ (window).bench.userAgent())
    const chromeVersion = /Chrome\/([\d.]+)/.exec(userAgent)?.[1] ?? userAgent
    log(`browser: Chromium ${chromeVersion}, bundle ${served.bundleBytes} bytes, flat API ${server.url}`)
    /** @param {string} fn @param {unknown[]} args */
    const call = async (fn, ...args) => {
      const out = await page.evaluate(([f, a]) => /** @type {any} */ (window).bench[f](...a), [fn, args])
      check()
      return out
    }
    const rows = []

    // --- cold start first, while the server holds exactly the 1 000 seeded flags: a second page (same profile, so
    // storage persists) seeded online, then loaded offline again and again.
    const cold = await context.newPage()
    cold.on('pageerror', (error) => errors.push(`cold pageerror: ${error.message}`))
    const coldResult = async (/** @type {string} */ query, file = 'cold.html') => {
      await cold.goto(`${server.url}/${file}?${query}`)
      await cold
        .waitForFunction(() => /** @type {any} */ (window).coldResult || /** @type {any} */ (window).coldError, null, {
          timeout: 60_000,
        })
        .catch(async (/** @type {Error} */ error) => {
          const step = await cold.evaluate(() => /** @type {any} */ (window).coldProgress).catch(() => '?')
          throw new Error(`${file}?${query} stalled at ${step}: ${error.message}`)
        })
      const [result, error] = await cold.evaluate(() => [
        /** @type {any} */ (window).coldResult,
        /** @type {any} */ (window).coldError,
      ])
      if (error) throw new Error(`cold start page: ${error}`)
      check()
      return result
    }
    for (const store of ['ls', 'idb']) await coldResult(`mode=seed&store=${store}&flags=${COLD_FLAGS}&ops=${COLD_OPS}`)
    // Warm-up: from here on the browser's cache holds the pages' files (assets/ fresh, the rest to revalidate).
    for (const query of [
      'mode=measure&store=ls',
      'mode=raw&store=ls',
      'mode=measure&store=idb',
      'mode=raw&store=idb',
    ]) {
      await coldResult(query)
    }
    await coldResult('mode=measure&store=ls', 'cold-revalidated.html')
    /** @type {Record<'ls' | 'lsRaw' | 'idb' | 'idbRaw' | 'revalidated', any[]>} */
    const c = { ls: [], lsRaw: [], idb: [], idbRaw: [], revalidated: [] }
    // Interleaved, so each figure and its floor see the same machine.
    await profiled(cold, 'cold-start', async () => {
      for (let i = 0; i < sizes.coldRuns; i++) {
        c.ls.push(await coldResult('mode=measure&store=ls'))
        c.lsRaw.push(await coldResult('mode=raw&store=ls'))
        c.idb.push(await coldResult('mode=measure&store=idb'))
        c.idbRaw.push(await coldResult('mode=raw&store=idb'))
        c.revalidated.push(await coldResult('mode=measure&store=ls', 'cold-revalidated.html'))
      }
    })
    for (const [name, runs] of Object.entries({ ls: c.ls, idb: c.idb, revalidated: c.revalidated })) {
      for (const r of runs) {
        const atCreation = name !== 'idb'
        if (
          r.source !== 'cache' ||
          r.flags !== COLD_FLAGS ||
          r.queued !== COLD_OPS ||
          r.pendingVisibleMs === null ||
          r.answeredAtCreation !== atCreation
        ) {
          throw new Error(
            `cold start (${name}) did not answer from the cache with the queue on top: ${JSON.stringify(r)}`,
          )
        }
      }
    }
    /** @param {any[]} runs @param {string} field */
    const at = (runs, field) => runs.map((r) => r[field])
    /** @param {any[]} runs */
    const afterStart = (runs) => runs.map((r) => r.firstAnswerMs - r.moduleStartMs)
    const firsts = at(c.ls, 'firstAnswerMs')
    const moduleStarts = at(c.ls, 'moduleStartMs')
    log(
      `browser cold start: first getFlag ${median(firsts).toFixed(1)} ms (${median(afterStart(c.ls)).toFixed(1)} after the module started), queue on top ${median(at(c.ls, 'pendingVisibleMs')).toFixed(1)} ms; localStorage by hand ${median(at(c.lsRaw, 'firstAnswerMs')).toFixed(1)} ms; IndexedDB cache ${median(at(c.idb, 'firstAnswerMs')).toFixed(1)} ms, by hand ${median(at(c.idbRaw, 'firstAnswerMs')).toFixed(1)} ms; revalidated ${median(at(c.revalidated, 'firstAnswerMs')).toFixed(1)} ms`,
    )
    // Listed last; measured first.
    const coldRow = row({
      id: 'browser.cold_start.ms',
      value: median(firsts),
      unit: 'ms',
      baseline: median(moduleStarts),
      ratio: median(moduleStarts) / median(firsts),
      goal: atMost(100),
      note: `navigation start → first getFlag() answered from the flag cache with default options (localStorage: the set is there when createFlagClient returns, checked in every run), 1 000 flags cached and ${COLD_OPS} edits queued in the outbox, both clients offline via manualOnlineSource(false); the page as a built app ships it: its module and the ${Math.round(served.bundleBytes / 1024)} KB shipped bundle under content-hashed names in assets/, which the flat API serves immutable (so a repeat visit takes them from the browser's cache; the page itself is revalidated over loopback), the bundle preloaded (<link rel="modulepreload">); ${spread(firsts)} ms; the queued edits (IndexedDB) show on top at ${spread(at(c.ls, 'pendingVisibleMs'))} ms; baseline = the same navigation until the page's module starts running (${spread(moduleStarts)} ms), i.e. what any script on this page pays first; module start → answer ${spread(afterStart(c.ls))} ms, against the floor measured in the same page and run (interleaved): the same navigation reading and parsing the localStorage entry by hand at ${spread(at(c.lsRaw, 'firstAnswerMs'))} ms, ${spread(afterStart(c.lsRaw))} ms after its module started`,
      extra: { runs: c.ls, raw: c.lsRaw },
    })
    const idbFirsts = at(c.idb, 'firstAnswerMs')
    const idbRawFirsts = at(c.idbRaw, 'firstAnswerMs')
    const idbRow = row({
      id: 'browser.cold_start.indexeddb_ms',
      value: median(idbFirsts),
      unit: 'ms',
      baseline: median(idbRawFirsts),
      ratio: median(idbRawFirsts) / median(idbFirsts),
      note: `browser.cold_start.ms's page with the flag cache in IndexedDB (localStorage: null; where a set over 1 000 000 characters goes), interleaved with it: ${spread(idbFirsts)} ms, ${spread(afterStart(c.idb))} ms after its module started; baseline = the same navigation answering by hand from IndexedDB (open the cache database, get the one record of 1 000 flags) at ${spread(idbRawFirsts)} ms, ${spread(afterStart(c.idbRaw))} ms after its module started (the open alone ${spread(c.idbRaw.map((r) => r.openedMs - r.moduleStartMs))} ms); no goal`,
      extra: { runs: c.idb, raw: c.idbRaw },
    })
    const revalidatedFirsts = at(c.revalidated, 'firstAnswerMs')
    const revalidatedRow = row({
      id: 'browser.cold_start.revalidated_ms',
      value: median(revalidatedFirsts),
      unit: 'ms',
      baseline: median(firsts),
      ratio: median(firsts) / median(revalidatedFirsts),
      note: `browser.cold_start.ms's page loading unhashed copies of its module and bundle, which the server revalidates on every load (max-age=0: three conditional requests, each a 304), interleaved with it: ${spread(revalidatedFirsts)} ms, its module starting at ${spread(at(c.revalidated, 'moduleStartMs'))} ms; baseline = browser.cold_start.ms in the same run; no goal (what a page pays whose scripts are not served as immutable)`,
      extra: { runs: c.revalidated },
    })
    await cold.close()

    // --- enqueue: the client's defaults against raw adds with the same durability hint (the client's default,
    // 'relaxed'), 5 interleaved runs (3 quick); then each durability mode on both sides (3 interleaved rounds each).
    await call('enqueueOurs', 200, null) // warm-up
    await call('enqueueRaw', 200, CLIENT_DURABILITY)
    const enq = { ours: /** @type {number[]} */ ([]), raw: /** @type {number[]} */ ([]) }
    await profiled(page, 'enqueue', async () => {
      for (let i = 0; i < sizes.enqueueRuns; i++) {
        enq.ours.push(await call('enqueueOurs', sizes.enqueue, null))
        enq.raw.push(await call('enqueueRaw', sizes.enqueue, CLIENT_DURABILITY))
        log(`browser enqueue run ${i + 1}: ${Math.round(enq.ours[i])} ops/s, raw IndexedDB ${Math.round(enq.raw[i])}`)
      }
    })
    /** @type {Record<string, {ours: number[], raw: number[]}>} */
    const enqModes = {}
    for (const mode of DURABILITY_MODES) enqModes[mode] = { ours: [], raw: [] }
    for (let round = 0; round < 3; round++) {
      for (const mode of DURABILITY_MODES) {
        enqModes[mode].ours.push(await call('enqueueOurs', sizes.enqueueModes, mode))
        enqModes[mode].raw.push(await call('enqueueRaw', sizes.enqueueModes, mode))
      }
    }
    for (const mode of DURABILITY_MODES) {
      log(
        `browser enqueue ${mode}: ${Math.round(median(enqModes[mode].ours))} ops/s, raw IndexedDB ${Math.round(median(enqModes[mode].raw))}`,
      )
    }
    const enqRatios = enq.ours.map((x, i) => x / enq.raw[i])
    rows.push(
      row({
        id: 'browser.enqueue.ratio',
        value: median(enq.ours),
        unit: 'ops/s',
        baseline: median(enq.raw),
        // Each run is paired with the raw run right after it: the median of the pairs' ratios cancels the machine's
        // drift between runs, which the quotient of the two medians does not.
        ratio: median(enqRatios),
        goal: atLeast(0.7, 'ratio'),
        note: `Chromium ${chromeVersion}, shipped bundle: ${sizes.enqueue} sequential awaited update() calls (each committed to IndexedDB: one read-write transaction of ops + tombstones), the client's default durability ('${CLIENT_DURABILITY}'); ours ${spread(enq.ours)} ops/s; baseline = raw IndexedDB add() of the same row, one read-write transaction each with durability '${CLIENT_DURABILITY}', awaited to complete, interleaved in the same page: ${spread(enq.raw)}; ratio = median of the per-run ratios ${enqRatios.map((r) => r.toFixed(2)).join(', ')} (each run against the raw run right after it)`,
        extra: { runs: { ours: enq.ours, baseline: enq.raw }, durability: enqModes },
      }),
    )
    for (const mode of DURABILITY_MODES) {
      const { ours, raw } = enqModes[mode]
      rows.push(
        row({
          id: `browser.enqueue.${mode}.ops_per_s`,
          value: median(ours),
          unit: 'ops/s',
          baseline: median(raw),
          ratio: median(ours) / median(raw),
          note: `as browser.enqueue.ratio (${sizes.enqueueModes} updates per run, 3 rounds interleaved with the other modes) with durability '${mode}' on both sides: the client's durability option, the hint on each raw transaction${mode === 'default' ? ' (the browser chooses)' : ''}; ours ${spread(ours)} ops/s; baseline = raw IndexedDB add() in the same mode: ${spread(raw)}`,
          extra: { runs: { ours, baseline: raw } },
        }),
      )
    }
    const cost = (/** @type {'ours' | 'raw'} */ side) => median(enqModes.relaxed[side]) / median(enqModes.strict[side])
    rows.push(
      row({
        id: 'browser.durability.strict_cost',
        value: cost('ours'),
        unit: 'x',
        baseline: cost('raw'),
        ratio: cost('raw') / cost('ours'),
        note: `what 'strict' durability costs an awaited update(): relaxed ops/s ÷ strict ops/s for the client (${Math.round(median(enqModes.relaxed.ours))} ÷ ${Math.round(median(enqModes.strict.ours))}; browser default ${Math.round(median(enqModes.default.ours))}); baseline = the same quotient for raw IndexedDB add() (${Math.round(median(enqModes.relaxed.raw))} ÷ ${Math.round(median(enqModes.strict.raw))}; browser default ${Math.round(median(enqModes.default.raw))}); medians of 3 interleaved rounds of ${sizes.enqueueModes}; the client's default is '${CLIENT_DURABILITY}' from this measurement (see packages/sync-client/README.md)`,
      }),
    )

    // --- drain: batchSize 500 to the flat API's /sync; the client's default up to 3 runs, relaxed and strict 1 each.
    /** @type {Record<string, {ours: number[], raw: number[]}>} */
    const drains = { default: { ours: [], raw: [] }, relaxed: { ours: [], raw: [] }, strict: { ours: [], raw: [] } }
    const drainStarted = now()
    await profiled(page, 'drain500', async () => {
      for (let i = 0; i < 3 && (i === 0 || now() - drainStarted < 45_000); i++) {
        drains.default.ours.push(await call('drainOurs', sizes.drain, 500, null))
        drains.default.raw.push(await call('drainRaw', sizes.drain, 500, CLIENT_DURABILITY))
        log(
          `browser drain500 run ${i + 1}: ${Math.round(drains.default.ours[i])} ops/s, raw IndexedDB ${Math.round(drains.default.raw[i])}`,
        )
      }
    })
    for (const mode of /** @type {const} */ (['relaxed', 'strict'])) {
      drains[mode].ours.push(await call('drainOurs', sizes.drain, 500, mode))
      drains[mode].raw.push(await call('drainRaw', sizes.drain, 500, mode))
      log(`browser drain500 ${mode}: ${Math.round(drains[mode].ours[0])} ops/s, raw ${Math.round(drains[mode].raw[0])}`)
    }
    const d = drains.default
    rows.push(
      row({
        id: 'browser.drain500.ratio',
        value: median(d.ours),
        unit: 'ops/s',
        baseline: median(d.raw),
        ratio: median(d.ours) / median(d.raw),
        goal: atLeast(0.5, 'ratio'),
        note: `Chromium, shipped bundle: ${sizes.drain.toLocaleString('en')} queued flag inserts, flush() with batchSize 500 to the flat API CLI's /sync (its receiver, SQLite) on the page's own origin: cut batch → POST → ack → delete, the client's default durability ('${CLIENT_DURABILITY}'); ours ${spread(d.ours)} ops/s; baseline = raw IndexedDB getAll(500) + delete of each row per read-write transaction (durability '${CLIENT_DURABILITY}') in the same page: ${spread(d.raw)} rows/s`,
        extra: { runs: { ours: d.ours, baseline: d.raw } },
      }),
    )
    for (const mode of /** @type {const} */ (['relaxed', 'strict'])) {
      rows.push(
        row({
          id: `browser.drain500.${mode}.ops_per_s`,
          value: drains[mode].ours[0],
          unit: 'ops/s',
          baseline: drains[mode].raw[0],
          ratio: drains[mode].ours[0] / drains[mode].raw[0],
          note: `as browser.drain500.ratio with durability '${mode}' on both sides (the client's durability option, the hint on each raw transaction), one run; baseline = raw IndexedDB in the same mode`,
        }),
      )
    }

    // --- compaction and evaluation in the page.
    const comp = await profiled(page, 'compaction', () => call('compaction', sizes.compaction, sizes.compactionRounds))
    const compRatios = comp.ours.map((/** @type {number} */ x, /** @type {number} */ i) => x / comp.baseline[i])
    log(`browser compaction: ${Math.round(median(comp.ours))} ops/s, Map pass ${Math.round(median(comp.baseline))}`)
    rows.push(
      row({
        id: 'browser.compaction.ops_per_s',
        value: median(comp.ours),
        unit: 'ops/s',
        baseline: median(comp.baseline),
        ratio: median(compRatios),
        note: `compact() from the shipped bundle on ${sizes.compaction.toLocaleString('en')} random queued ops (compaction.ratio's workload) → ${comp.out.toLocaleString('en')}, in the page, full GC before each pass; ours ${spread(comp.ours)} ops/s; baseline = the bare Map pass (last op per record) right after ours in each round: ${spread(comp.baseline)}; ratio = median per-round ratio (${spread(compRatios)})`,
        extra: { runs: { ours: comp.ours, baseline: comp.baseline }, ratios: compRatios },
      }),
    )
    const ev = await profiled(page, 'eval', () => call('evaluation', sizes.evalMs, 3))
    log(`browser eval: ${Math.round(median(ev.ours))} evals/s, hand-coded ${Math.round(median(ev.baseline))}`)
    rows.push(
      row({
        id: 'browser.eval.ops_per_s',
        value: median(ev.ours),
        unit: 'evals/s',
        baseline: median(ev.baseline),
        ratio: median(ev.ours) / median(ev.baseline),
        note: `evaluate() of eval.targeted's flag (5 rules, 50 % rollout, 3 variants) cycling 65 536 users in the page (evaluator bundled with esbuild, minified; the browser bundle does not export it), ${sizes.evalMs} ms per run; ours ${spread(ev.ours)} evals/s; baseline = the same decision hand-coded with the package's murmur3, interleaved: ${spread(ev.baseline)}`,
        extra: { runs: { ours: ev.ours, baseline: ev.baseline } },
      }),
    )

    rows.push(coldRow, idbRow, revalidatedRow)
    await context.close()
    return rows
  } finally {
    await browser.close()
    await server.stop()
    served.remove()
  }
}

benchMain(import.meta.url, run)
