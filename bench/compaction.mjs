// compaction.ratio: `compact()` of the sync client over random queued operations ÷ the least any compaction must do
// (one Map lookup per operation keeping the last one per record). The goal is on this ratio, which follows our code
// rather than the machine. compaction.ops_per_s: the absolute figure, without a goal.
//
// How it is measured, and why (measured naively in one process, it swings from 0.24 to 0.71 between runs):
// - Each of PROCESSES runs is a fresh `node --expose-gc` child, so the heap layout, the JIT's tiering and inline
//   caches of one run do not carry into the next; the parent reports min/median/max across the runs.
// - Both sides get the same treatment: the same warm-up calls, a full GC before every timed call (without it one
//   side pays for the garbage the other left, and a major GC of the 1.75 M-op workload heap, ~0.3 s, lands in
//   whichever window it happens to fall), and the order inside a round alternates so neither always runs first.
// - The GC time that still falls inside each timed window (the side's own allocation) is read from the trace and
//   reported beside the figures.
// `node bench/compaction.mjs` alone measures the same way as `npm run bench`: the children get --expose-gc themselves.
import { spawn } from 'node:child_process'
import { PerformanceObserver } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { compact } from '@flagsync/sync-client'
import { atLeast, benchMain, log, row } from './lib/cli.mjs'
import { median, now, sleep } from './lib/stats.mjs'
import { COLLECTIONS, lastPerRecord, RECORDS_PER_COLLECTION, randomOperations } from './lib/workloads.mjs'

const PROCESSES = 3
const CHILD_FLAG = '--child'
const CHILD_PREFIX = 'COMPACTION_CHILD '

/** @param {boolean} quick */
const sizesFor = (quick) => (quick ? [100_000, 200_000, 400_000] : [250_000, 500_000, 1_000_000])

/**
 * One fresh process: warm-up, then interleaved timed rounds.
 * @param {boolean} quick
 */
async function child(quick) {
  const gc = globalThis.gc
  if (typeof gc !== 'function') throw new Error('the compaction child needs --expose-gc')
  const sizes = sizesFor(quick)
  const rounds = quick ? 4 : 5
  const workloads = sizes.map((n) => randomOperations(n))
  /** @type {{start: number, duration: number}[]} */
  const gcEntries = []
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcEntries.push({ start: e.startTime, duration: e.duration })
  })
  observer.observe({ entryTypes: ['gc'] })
  /** @type {{size: number, side: 'ours' | 'baseline', round: number, t0: number, t1: number}[]} */
  const windows = []
  const sides = { ours: compact, baseline: lastPerRecord }
  /** @param {'ours' | 'baseline'} side @param {number} i @param {number} round */
  const timeOnce = (side, i, round) => {
    const ops = /** @type {any[]} */ (workloads[i])
    gc()
    const t0 = now()
    const out = sides[side](ops).length
    const t1 = now()
    if (out < 0) log(out)
    if (round >= 0) windows.push({ size: sizes[i] ?? 0, side, round, t0, t1 })
    return out
  }
  // The same warm-up for both: one call each per size (three per side), so both reach the optimizing tier first.
  /** @type {Record<number, number>} */
  const outBySize = {}
  workloads.forEach((_, i) => {
    outBySize[sizes[i] ?? 0] = timeOnce('ours', i, -1)
    timeOnce('baseline', i, -1)
  })
  for (let r = 0; r < rounds; r++) {
    workloads.forEach((_, i) => {
      const order = /** @type {const} */ (r % 2 === 0 ? ['ours', 'baseline'] : ['baseline', 'ours'])
      for (const side of order) timeOnce(side, i, r)
    })
  }
  await sleep(50) // lets the observer deliver the last entries
  observer.disconnect()
  const timed = windows.map((w) => {
    const inside = gcEntries.filter((e) => e.start >= w.t0 && e.start < w.t1)
    return {
      size: w.size,
      side: w.side,
      round: w.round,
      rate: (w.size / (w.t1 - w.t0)) * 1000,
      gcMs: inside.reduce((a, e) => a + e.duration, 0),
    }
  })
  process.stdout.write(`${CHILD_PREFIX}${JSON.stringify({ sizes, rounds, outBySize, timed })}\n`)
}

/**
 * Runs one child to completion and returns its report.
 * @param {boolean} quick
 * @param {number} index
 */
function runChild(quick, index) {
  const nodeArgs = ['--expose-gc']
  const dir = process.env.BENCH_PROFILE
  if (dir)
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=bench-compaction-run${index + 1}.cpuprofile`)
  const script = fileURLToPath(import.meta.url)
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...nodeArgs, script, CHILD_FLAG, ...(quick ? ['--quick'] : [])], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    proc.stdout.on('data', (d) => {
      out += d
    })
    proc.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith(CHILD_PREFIX))
      if (code === 0 && line) resolve(JSON.parse(line.slice(CHILD_PREFIX.length)))
      else reject(new Error(`compaction run ${index + 1} exited with ${code}`))
    })
  })
}

/** @param {number[]} xs */
const spread = (xs) => ({ min: Math.min(...xs), median: median(xs), max: Math.max(...xs) })

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const sizes = sizesFor(quick)
  const largest = /** @type {number} */ (sizes[sizes.length - 1])
  const smallest = /** @type {number} */ (sizes[0])
  /** @type {any[]} */
  const reports = []
  for (let p = 0; p < PROCESSES; p++) {
    const report = await runChild(quick, p)
    reports.push(report)
    /** @param {number} size @param {string} side */
    const rates = (size, side) =>
      report.timed
        .filter((/** @type {any} */ t) => t.size === size && t.side === side)
        .map((/** @type {any} */ t) => t.rate)
    for (const n of sizes) {
      log(
        `compaction run ${p + 1} n=${n}: ours ${Math.round(median(rates(n, 'ours')))} ops/s, baseline ${Math.round(median(rates(n, 'baseline')))} ops/s, ${report.outBySize[n]} ops out`,
      )
    }
  }
  /** Per run: the median of its per-round ratios (ours and baseline of a round ran back to back) at `size`. */
  const perRun = reports.map((report) => {
    /** @param {number} size @param {string} side */
    const of = (size, side) =>
      report.timed
        .filter((/** @type {any} */ t) => t.size === size && t.side === side)
        .sort((/** @type {any} */ a, /** @type {any} */ b) => a.round - b.round)
    const ours = of(largest, 'ours')
    const base = of(largest, 'baseline')
    const ratios = ours.map((/** @type {any} */ t, /** @type {number} */ i) => t.rate / base[i].rate)
    const oursSmall = of(smallest, 'ours').map((/** @type {any} */ t) => t.rate)
    const baseSmall = of(smallest, 'baseline').map((/** @type {any} */ t) => t.rate)
    const sum = (/** @type {any[]} */ ts) => ts.reduce((a, t) => a + t.gcMs, 0)
    return {
      ratio: median(ratios),
      ratios,
      ours: median(ours.map((/** @type {any} */ t) => t.rate)),
      baseline: median(base.map((/** @type {any} */ t) => t.rate)),
      linearity: median(ours.map((/** @type {any} */ t) => t.rate)) / median(oursSmall),
      baseLinearity: median(base.map((/** @type {any} */ t) => t.rate)) / median(baseSmall),
      gcMsPerCall: { ours: sum(ours) / ours.length, baseline: sum(base) / base.length },
      bySize: Object.fromEntries(
        sizes.map((n) => [n, Math.round(median(of(n, 'ours').map((/** @type {any} */ t) => t.rate)))]),
      ),
    }
  })
  const ratio = spread(perRun.map((r) => r.ratio))
  const ours = spread(perRun.map((r) => r.ours))
  const baseline = spread(perRun.map((r) => r.baseline))
  const linearity = median(perRun.map((r) => r.linearity))
  const rounds = reports[0].rounds
  const out = reports[0].outBySize[largest]
  const f2 = (/** @type {number} */ x) => x.toFixed(2)
  const fk = (/** @type {number} */ x) => Math.round(x).toLocaleString('en')
  const gcOurs = median(perRun.map((r) => r.gcMsPerCall.ours))
  const gcBase = median(perRun.map((r) => r.gcMsPerCall.baseline))
  const workload = `compact() of ${largest.toLocaleString('en')} random queued ops (20 % insert, 65 % update, 15 % delete) over ${COLLECTIONS.length}×${RECORDS_PER_COLLECTION.toLocaleString('en')} records → ${out.toLocaleString('en')} ops out, in Node`
  const method = `${PROCESSES} fresh processes (--expose-gc), each: one warm-up call per size for both sides, then ${rounds} rounds with ours and the baseline back to back in alternating order, a full GC before every timed call`
  const bySize = Object.fromEntries(sizes.map((n) => [n, Math.round(median(perRun.map((r) => r.bySize[n])))]))
  return [
    row({
      id: 'compaction.ratio',
      value: ours.median,
      unit: 'ops/s',
      baseline: baseline.median,
      ratio: ratio.median,
      goal: atLeast(0.6, 'ratio'),
      note: `${workload}; baseline = keep the last op per record (one Map lookup per op) on the same ops; ${method}; a run's ratio = the median of its per-round ratios; ratio min/median/max over the ${PROCESSES} runs ${perRun.map((r) => f2(r.ratio)).join(', ')} → ${f2(ratio.min)}/${f2(ratio.median)}/${f2(ratio.max)}; GC inside the timed calls ${gcOurs.toFixed(1)} ms (ours) and ${gcBase.toFixed(1)} ms (baseline) per call, median of the runs`,
      extra: {
        runs: perRun.map((r) => ({
          ratio: r.ratio,
          ratios: r.ratios,
          ours: r.ours,
          baseline: r.baseline,
          gcMsPerCall: r.gcMsPerCall,
        })),
        min: ratio.min,
        median: ratio.median,
        max: ratio.max,
      },
    }),
    row({
      id: 'compaction.ops_per_s',
      value: ours.median,
      unit: 'ops/s',
      baseline: baseline.median,
      ratio: ours.median / baseline.median,
      note: `${workload}; median over ${PROCESSES} runs of each run's median of ${rounds} rounds, min/median/max ${fk(ours.min)}/${fk(ours.median)}/${fk(ours.max)} ops/s; baseline (the bare Map pass, same rounds) ${fk(baseline.min)}/${fk(baseline.median)}/${fk(baseline.max)} ops/s; follows the machine (no goal: compaction.ratio is the goal)`,
      extra: { opsPerSecondBySize: bySize },
    }),
    row({
      id: 'compaction.linearity',
      value: linearity,
      unit: `ops/s(${largest / 1000}k) ÷ ops/s(${smallest / 1000}k)`,
      baseline: median(perRun.map((r) => r.baseLinearity)),
      ratio: null,
      // Linear in n: the time per operation at 1 M is at most 1.25× that at 250 k. Faster per operation at the
      // larger size (> 1) happens (larger queues revisit more records, the bare Map pass shows it too) and is fine.
      goal: atLeast(0.8),
      note: `ops/s by size (median over ${PROCESSES} runs): ${sizes.map((n) => `${n / 1000}k ${fk(bySize[n] ?? 0)}`).join(', ')}; 1.0 is perfectly linear, above 1 the larger queue is cheaper per operation; baseline = the same quotient for the bare Map pass`,
    }),
  ]
}

if (process.argv.includes(CHILD_FLAG)) {
  child(process.argv.includes('--quick')).then(
    () => process.exit(0),
    (error) => {
      log(error instanceof Error ? error.stack : String(error))
      process.exit(1)
    },
  )
} else benchMain(import.meta.url, run)
