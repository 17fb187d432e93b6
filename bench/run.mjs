// npm run bench [-- --quick] [-- --only=rest,receiver] [-- --profile] (--only=ofrep: every ofrep-* module)
// Runs every benchmark in its own process (each measures its baseline in the same run), prints the table, writes
// bench/results.json (bench/results.quick.json for --quick) and, for a full run of everything, re-renders the table
// and the fan-out chart in bench/README.md.
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { log, RESULT_PREFIX } from './lib/cli.mjs'
import { machineInfo } from './lib/machine.mjs'
import { benchDir, repoRoot } from './lib/proc.mjs'
import { lineChart } from './lib/svg.mjs'

/** Every benchmark module with the rows it reports (listed as "not run" if it fails). */
const MODULES = [
  {
    name: 'compaction',
    ids: ['compaction.ratio', 'compaction.ops_per_s', 'compaction.linearity'],
    // Three fresh processes (compaction.mjs starts them itself, with --expose-gc), about 25 s each on a quiet machine.
    timeoutMs: 360_000,
  },
  { name: 'eval', ids: ['eval.targeted.ops_per_s'] },
  {
    // What an app pays (Vite app builds), then each browser entry's own code against its budget
    // (scripts/bundle-size.mjs).
    name: 'bundle',
    ids: [
      'bundle.app_sync.gz_bytes',
      'bundle.app_flag.gz_bytes',
      'bundle.app_react.gz_bytes',
      'bundle.flag_client.gz_bytes',
      'bundle.sync_client.gz_bytes',
      'bundle.evaluate.gz_bytes',
    ],
  },
  // The service dashboard's first load against its 150 kB goal (the Vite build, gzip -9).
  { name: 'dashboard', ids: ['dashboard.first_load.gz_bytes'] },
  {
    // The flags page with 1 000 flags × 4 environments in Chromium: the table from the persisted cache, and one live
    // update's stream event → row (needs the dashboard's Vite build, which the `dashboard` module above makes).
    name: 'dashboard-render',
    ids: ['dashboard.flags1000.render_ms', 'dashboard.flags1000.update_p50_ms', 'dashboard.flags1000.update_p95_ms'],
  },
  {
    name: 'client',
    ids: ['client.enqueue.ratio', 'client.drain500.ratio', 'client.drain50.ops_per_s'],
    nodeArgs: ['--expose-gc'], // a full GC before each timed drain, ours and the baseline alike
    timeoutMs: 300_000,
  },
  { name: 'receiver', ids: ['receiver.apply500.ratio', 'receiver.apply500.write_ratio'] },
  // Conflict checks and the audit trail: baseRevision's cost on apply500 and on a 1 000-operation batch of
  // stale bases (409), a long history's page time.
  { name: 'audit', ids: ['receiver.apply500.base_ratio', 'receiver.apply1000.stale_ms', 'audit.history10k.ms'] },
  { name: 'rest', ids: ['rest.list350.ratio', 'rest.get.ratio'] },
  // OFREP bulk evaluation of 350 flags per random context against bare node:http answering a body of the same size.
  { name: 'ofrep-bulk', ids: ['ofrep.bulk350.ratio'] },
  { name: 'bootstrap', ids: ['stream.bootstrap10k.ms', 'stream.bootstrap10k.after_change.ms'] },
  {
    name: 'sse-fanout',
    ids: ['sse.fanout10k.ratio', 'sse.rss_per_conn_bytes', 'sse.fanout1k.p99_ms', 'sse.fanout5k.p99_ms'],
  },
  {
    // One flag change to 10 000 OFREP refresh streams (refetchEvaluation) against the bare SSE fan-out baseline.
    name: 'ofrep-refresh',
    ids: ['ofrep.refresh10k.p99_ms'],
    timeoutMs: 360_000,
  },
  {
    // Kill and restart under 10 000 subscribers; the server's peak RSS over the reconnect herd; first, the bytes
    // of a Last-Event-ID resume after 10 missed changes against a full bootstrap.
    name: 'sse-reconnect',
    ids: ['sse.resume.bytes_ratio', 'sse.reconnect10k.s', 'sse.reconnect10k.peak_rss_mib'],
    timeoutMs: 540_000,
  },
  {
    // Debian's Chromium loading the shipped bundle (npm run build) in a page served by the flat API.
    name: 'browser',
    ids: [
      'browser.enqueue.ratio',
      'browser.enqueue.relaxed.ops_per_s',
      'browser.enqueue.strict.ops_per_s',
      'browser.enqueue.default.ops_per_s',
      'browser.durability.strict_cost',
      'browser.drain500.ratio',
      'browser.drain500.relaxed.ops_per_s',
      'browser.drain500.strict.ops_per_s',
      'browser.compaction.ops_per_s',
      'browser.eval.ops_per_s',
      'browser.cold_start.ms',
      'browser.cold_start.indexeddb_ms',
      'browser.cold_start.revalidated_ms',
    ],
    timeoutMs: 420_000,
  },
  {
    // The flag service's impressions at 5 million stored rows, on SQLite and PostgreSQL.
    name: 'impressions',
    ids: [
      'impressions.ingest_per_s',
      'impressions.list_filtered.ms',
      'impressions.stats.ms',
      'impressions.ingest_at_5m_per_s',
      'impressions.pg.ingest_per_s',
      'impressions.pg.list_filtered.ms',
      'impressions.pg.stats.ms',
      'impressions.pg.ingest_at_5m_per_s',
    ],
    timeoutMs: 300_000,
  },
  {
    // The flag service's outbound webhooks: deliveries/s to a local receiver against a bare POST loop, and the lag
    // from a flag write's commit to its delivery.
    name: 'webhooks',
    ids: ['webhook.deliver.ratio', 'webhook.lag.p99_ms'],
  },
  {
    // The flag service applying 1 000 scheduled changes due within one second: the p99 of their lateness.
    name: 'schedules',
    ids: ['schedule.fire1000.p99_ms'],
  },
]
const MODULE_TIMEOUT_MS = 240_000

const args = process.argv.slice(2)
const quick = args.includes('--quick')
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',')
const profileDir = args.includes('--profile')
  ? join(benchDir, 'profiles', new Date().toISOString().replace(/[:.]/g, '-'))
  : null

/**
 * @param {typeof MODULES[number]} mod
 * @returns {Promise<import('./lib/cli.mjs').Row[]>}
 */
function runModule(mod) {
  const nodeArgs = [...(mod.nodeArgs ?? [])]
  const env = { ...process.env }
  if (profileDir) {
    mkdirSync(profileDir, { recursive: true })
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=bench-${mod.name}.cpuprofile`)
    env.BENCH_PROFILE = profileDir
  }
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...nodeArgs, join(benchDir, `${mod.name}.mjs`), ...(quick ? ['--quick'] : [])],
      {
        cwd: repoRoot,
        env,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
    })
    const timeoutMs = mod.timeoutMs ?? MODULE_TIMEOUT_MS
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`timed out after ${timeoutMs / 1000} s`))
    }, timeoutMs)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      const line = out.split('\n').find((l) => l.startsWith(RESULT_PREFIX))
      if (code === 0 && line) resolve(JSON.parse(line.slice(RESULT_PREFIX.length)))
      else reject(new Error(`exited with ${code ?? signal}${line ? '' : ' without results'}`))
    })
  })
}

/** @param {number | null} v */
function fmt(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—'
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en')
  return String(+v.toPrecision(3))
}

/** @param {import('./lib/cli.mjs').Row} r */
function goalText(r) {
  if (!r.goal) return ''
  const on = r.goal.on === 'ratio' ? 'ratio' : 'value'
  if (r.goal.op === 'between') return `${fmt(r.goal.target)} ≤ ${on} ≤ ${fmt(r.goal.upper ?? null)}`
  return `${on} ${r.goal.op === '>=' ? '≥' : '≤'} ${fmt(r.goal.target)}`
}

/** @param {import('./lib/cli.mjs').Row} r */
function metText(r) {
  if (r.value === null) return 'not run'
  if (r.met === null || r.met === undefined) return ''
  return r.met ? 'met' : 'MISSED'
}

/** @param {import('./lib/cli.mjs').Row[]} rows */
function markdownTable(rows) {
  const lines = ['| id | ours | unit | baseline | ratio | goal | |', '|---|---:|---|---:|---:|---|---|']
  for (const r of rows) {
    lines.push(
      `| \`${r.id}\` | ${fmt(r.value)} | ${r.unit} | ${fmt(r.baseline)} | ${fmt(r.ratio)} | ${goalText(r)} | ${metText(r)} |`,
    )
  }
  return lines.join('\n')
}

/** @param {import('./lib/cli.mjs').Row[]} rows */
function consoleTable(rows) {
  const cells = rows.map((r) => [r.id, fmt(r.value), r.unit, fmt(r.baseline), fmt(r.ratio), goalText(r), metText(r)])
  const head = ['id', 'ours', 'unit', 'baseline', 'ratio', 'goal', '']
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)))
  const line = (/** @type {string[]} */ c) =>
    c.map((x, i) => (i === 1 || i === 3 || i === 4 ? x.padStart(widths[i]) : x.padEnd(widths[i]))).join('  ')
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n')
}

/** @param {string} text @param {string} name @param {string} content */
function replaceBetween(text, name, content) {
  const start = `<!-- bench:${name}:start -->`
  const end = `<!-- bench:${name}:end -->`
  const i = text.indexOf(start)
  const j = text.indexOf(end)
  if (i < 0 || j < i) return `${text.trimEnd()}\n\n${start}\n${content}\n${end}\n`
  return `${text.slice(0, i + start.length)}\n${content}\n${text.slice(j)}`
}

async function main() {
  if (args.includes('--render')) {
    // Only re-render README.md and the chart from bench/results.json.
    render(JSON.parse(readFileSync(join(benchDir, 'results.json'), 'utf8')))
    return
  }
  const machine = machineInfo()
  log(
    `flagsync benchmarks${quick ? ' (quick)' : ''} on ${machine.cpuModel} × ${machine.cores}, node ${machine.node}, load ${machine.loadAverageAtStart.join(' ')}`,
  )
  const started = Date.now()
  /** @type {import('./lib/cli.mjs').Row[]} */
  const results = []
  // `--only=ofrep` names every module whose name starts with `ofrep-` too.
  const selected = MODULES.filter((m) => !only || only.some((o) => m.name === o || m.name.startsWith(`${o}-`)))
  for (const mod of selected) {
    const t0 = Date.now()
    log(`\n== ${mod.name}`)
    try {
      results.push(...(await runModule(mod)))
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error)
      log(`${mod.name} failed: ${reason}`)
      for (const id of mod.ids) {
        results.push({
          id,
          value: null,
          unit: '',
          baseline: null,
          ratio: null,
          met: null,
          note: `not run: ${mod.name} ${reason}`,
        })
      }
    }
    log(`== ${mod.name} took ${((Date.now() - t0) / 1000).toFixed(0)} s`)
  }
  const seconds = Math.round((Date.now() - started) / 1000)
  machine.loadAverageAtEnd = /** @type {any} */ (machineInfo().loadAverageAtStart)
  const output = { machine: { ...machine, quick, durationSeconds: seconds }, results }
  // Only a full run of everything replaces results.json; partial and quick runs go beside it (git-ignored).
  const file = join(benchDir, only ? 'results.only.json' : quick ? 'results.quick.json' : 'results.json')
  writeFileSync(file, `${JSON.stringify(output, null, 2)}\n`)
  process.stdout.write(
    `\n${consoleTable(results)}\n\n${seconds} s in all${profileDir ? `; profiles in ${profileDir}` : ''}\n`,
  )

  if (!quick && !only) render(output)
}

/**
 * Re-renders the chart and the README's machine line and table from a results object.
 * @param {{ machine: any, results: import('./lib/cli.mjs').Row[] }} output
 */
function render({ machine, results }) {
  const seconds = machine.durationSeconds
  const fanout = results.find((r) => r.id === 'sse.fanout10k.ratio')
  const series = /** @type {any} */ (fanout?.extra)?.series
  if (series) {
    const svg = lineChart({
      title: 'One flag change to N open streams: p99 delivery latency',
      xLabel: 'subscribers of /stream',
      yLabel: 'p99 latency, ms (lower is better)',
      sizes: series.sizes,
      series: [
        { name: 'flagsync flat API (PATCH → SQLite → stream)', color: '#d9480f', values: series.ours },
        { name: 'bare node:http SSE baseline', color: '#1c7ed6', values: series.baseline },
      ],
      note: `${machine.cpuModel} × ${machine.cores}, node ${machine.node}, ${machine.startedAt.slice(0, 10)}`,
    })
    writeFileSync(join(benchDir, 'fanout-p99.svg'), svg)
  }
  const readmePath = join(benchDir, 'README.md')
  let readme = readFileSync(readmePath, 'utf8')
  const m = machine
  readme = replaceBetween(
    readme,
    'machine',
    `Measured ${m.startedAt.slice(0, 16).replace('T', ' ')} UTC on ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}, Node ${m.node}; load average at start ${m.loadAverageAtStart.join(' / ')}, at the end ${machine.loadAverageAtEnd.join(' / ')}; commit ${m.gitCommit ?? '?'}; ${seconds} s in all.`,
  )
  readme = replaceBetween(readme, 'results', markdownTable(results))
  writeFileSync(readmePath, readme)
  log('bench/README.md, bench/results.json and bench/fanout-p99.svg updated')
}

main().catch((error) => {
  log(error instanceof Error ? error.stack : String(error))
  process.exit(1)
})
