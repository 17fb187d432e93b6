// compaction.ratio: `compact()` of the sync client over random queued operations ÷ the least any compaction must do
// (one Map lookup per operation keeping the last one per record), per interleaved round; the goal is on this ratio,
// which follows our code rather than the machine. compaction.ops_per_s: the absolute figure, without a goal.
import { compact } from '@flagsync/sync-client'
import { atLeast, benchMain, log, row } from './lib/cli.mjs'
import { median, now } from './lib/stats.mjs'
import { COLLECTIONS, lastPerRecord, RECORDS_PER_COLLECTION, randomOperations } from './lib/workloads.mjs'

/**
 * ops/s of one `fn(ops)` run, after a full GC when exposed.
 * @param {(ops: any[]) => unknown[]} fn
 * @param {any[]} ops
 */
function timeOnce(fn, ops) {
  globalThis.gc?.()
  const t0 = now()
  const out = fn(ops).length
  const rate = ops.length / ((now() - t0) / 1000)
  if (out < 0) log(out)
  return rate
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const sizes = quick ? [100_000, 200_000, 400_000] : [250_000, 500_000, 1_000_000]
  const runs = quick ? 3 : 5
  const workloads = sizes.map((n) => randomOperations(n))
  /** @type {Record<number, {ours: number[], baseline: number[], out: number}>} */
  const bySize = {}
  workloads.forEach((ops, i) => {
    bySize[sizes[i]] = { ours: [], baseline: [], out: compact(ops).length }
    lastPerRecord(ops) // warm-up
  })
  // Sizes and implementations interleaved, so drift in the machine's load hits all of them alike.
  for (let r = 0; r < runs; r++) {
    workloads.forEach((ops, i) => {
      bySize[sizes[i]].ours.push(timeOnce(compact, ops))
      bySize[sizes[i]].baseline.push(timeOnce(lastPerRecord, ops))
    })
  }
  /** @type {Record<number, {ours: number, baseline: number, best: number, out: number}>} */
  const m = {}
  for (const n of sizes) {
    const b = bySize[n]
    m[n] = { ours: median(b.ours), baseline: median(b.baseline), best: Math.max(...b.ours), out: b.out }
    log(
      `compaction n=${n}: ${Math.round(m[n].ours)} ops/s (best ${Math.round(m[n].best)}; baseline ${Math.round(m[n].baseline)}), ${b.out} operations out`,
    )
  }
  const largest = sizes[sizes.length - 1]
  const smallest = sizes[0]
  const top = m[largest]
  const linearity = top.ours / m[smallest].ours
  const perSize = Object.fromEntries(sizes.map((n) => [n, Math.round(m[n].ours)]))
  // Each round's ours and baseline ran back to back, so their ratio cancels most of the machine's drift.
  const ratios = bySize[largest].ours.map((x, i) => x / bySize[largest].baseline[i])
  const spread = {
    min: Math.min(...ratios),
    median: median(ratios),
    max: Math.max(...ratios),
  }
  const fmt = (/** @type {number} */ x) => x.toFixed(2)
  const workload = `compact() of ${largest.toLocaleString('en')} random queued ops (20 % insert, 65 % update, 15 % delete) over ${COLLECTIONS.length}×${RECORDS_PER_COLLECTION.toLocaleString('en')} records → ${top.out.toLocaleString('en')} ops out, in Node`
  return [
    row({
      id: 'compaction.ratio',
      value: top.ours,
      unit: 'ops/s',
      baseline: top.baseline,
      ratio: spread.median,
      goal: atLeast(0.6, 'ratio'),
      note: `${workload}; baseline = keep the last op per record (one Map lookup per op), timed right after ours in each of ${runs} rounds (full GC before each); ratio = median of the per-round ratios, min/median/max ${fmt(spread.min)}/${fmt(spread.median)}/${fmt(spread.max)}`,
      extra: { ratios, min: spread.min, median: spread.median, max: spread.max },
    }),
    row({
      id: 'compaction.ops_per_s',
      value: top.ours,
      unit: 'ops/s',
      baseline: top.baseline,
      ratio: top.ours / top.baseline,
      note: `${workload}; median of ${runs} rounds, min/median/max ${[Math.min(...bySize[largest].ours), top.ours, Math.max(...bySize[largest].ours)].map((x) => Math.round(x).toLocaleString('en')).join('/')} ops/s; baseline = the bare Map pass in the same rounds; follows the machine (no goal: compaction.ratio is the goal)`,
      extra: {
        opsPerSecondBySize: perSize,
        bestOpsPerSecondBySize: Object.fromEntries(sizes.map((n) => [n, Math.round(m[n].best)])),
        outputBySize: Object.fromEntries(sizes.map((n) => [n, m[n].out])),
      },
    }),
    row({
      id: 'compaction.linearity',
      value: linearity,
      unit: `ops/s(${largest / 1000}k) ÷ ops/s(${smallest / 1000}k)`,
      baseline: top.baseline / m[smallest].baseline,
      ratio: null,
      // Linear in n: the time per operation at 1 M is at most 1.25× that at 250 k. Faster per operation at the
      // larger size (> 1) happens (larger queues revisit more records, the bare Map pass shows it too) and is fine.
      goal: atLeast(0.8),
      note: `ops/s by size: ${sizes.map((n) => `${n / 1000}k ${perSize[n].toLocaleString('en')}`).join(', ')}; 1.0 is perfectly linear, above 1 the larger queue is cheaper per operation`,
    }),
  ]
}

benchMain(import.meta.url, run)
