import { fileURLToPath } from 'node:url'
import { round } from './stats.mjs'

/**
 * @typedef {object} Goal
 * @property {'value' | 'ratio'} on which figure the goal applies to
 * @property {'>=' | '<=' | 'between'} op
 * @property {number} target for 'between', the lower bound
 * @property {number} [upper] for 'between', the upper bound
 */

/**
 * @typedef {object} Row
 * @property {string} id
 * @property {number | null} value our figure (null when not run)
 * @property {string} unit
 * @property {number | null} baseline the baseline's figure, same unit (null when there is none)
 * @property {number | null} ratio ours/baseline for throughput, baseline/ours for latency and size
 * @property {Goal} [goal]
 * @property {boolean | null} [met]
 * @property {string} [note]
 * @property {Record<string, unknown>} [extra]
 */

/**
 * A result row with the goal checked and figures rounded.
 * @param {Omit<Row, 'met'>} row
 * @returns {Row}
 */
export function row(row) {
  const figure = row.goal ? (row.goal.on === 'ratio' ? row.ratio : row.value) : null
  const met =
    row.goal && figure !== null && Number.isFinite(figure)
      ? row.goal.op === '>='
        ? figure >= row.goal.target
        : row.goal.op === '<='
          ? figure <= row.goal.target
          : figure >= row.goal.target && figure <= (row.goal.upper ?? Number.POSITIVE_INFINITY)
      : null
  return {
    ...row,
    value: row.value === null ? null : round(row.value),
    baseline: row.baseline === null ? null : round(row.baseline),
    ratio: row.ratio === null ? null : round(row.ratio),
    met,
  }
}

/** @param {number} target */
export const atLeast = (target, on = /** @type {'value' | 'ratio'} */ ('value')) => ({
  on,
  op: /** @type {const} */ ('>='),
  target,
})
/** @param {number} target */
export const atMost = (target, on = /** @type {'value' | 'ratio'} */ ('value')) => ({
  on,
  op: /** @type {const} */ ('<='),
  target,
})

/** Progress on stderr, so stdout stays machine-readable. @param {...unknown} args */
export function log(...args) {
  process.stderr.write(`${args.map(String).join(' ')}\n`)
}

export const RESULT_PREFIX = 'BENCH_RESULT '

/**
 * Makes a benchmark module runnable on its own: `node bench/x.mjs [--quick]`
 * prints its rows, and the orchestrator reads the `BENCH_RESULT` line.
 * @param {string} moduleUrl import.meta.url of the module
 * @param {(options: { quick: boolean }) => Promise<Row[]>} run
 */
export function benchMain(moduleUrl, run) {
  if (process.argv[1] !== fileURLToPath(moduleUrl)) return
  const quick = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1'
  run({ quick }).then(
    (rows) => {
      for (const r of rows)
        log(`${r.id}: ${r.value} ${r.unit} (baseline ${r.baseline}, ratio ${r.ratio}, met ${r.met})`)
      process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(rows)}\n`)
      process.exit(0)
    },
    (error) => {
      log(error instanceof Error ? error.stack : String(error))
      process.exit(1)
    },
  )
}
