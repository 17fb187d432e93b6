// receiver.apply500.ratio: batches of 500 flag upserts through POST /sync of the real receiver (its CLI, SQLite)
// vs the same work with nothing else: a bare node:http server in its own process, receiving the same bodies from the
// same fetch loop, JSON.parse, and one knex multi-row upsert per batch in one transaction (same pragmas).
// receiver.apply500.write_ratio: the same POSTs vs that upsert alone, in this process with no HTTP (the
// write path alone); the difference between the two baselines is the HTTP hop, reported in `extra`.
// Also records (in `extra`, outside the ratio) the round trip of sequential 50-operation batches, the size a sync
// client's drain of small batches waits for.
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { FlagStore, openDatabase } from '@flagsync/store'
import { createBaselineTable, upsertBaselineRows } from './lib/baseline-table.mjs'
import { atLeast, benchMain, log, row } from './lib/cli.mjs'
import { makeFlag } from './lib/flags.mjs'
import { benchDir, RECEIVER_CLI, spawnNode, startCli, tempDir } from './lib/proc.mjs'
import { median, now, percentile } from './lib/stats.mjs'

const BATCH = 500
const SMALL_BATCH = 50

/** Batches of 500 flags cycling over `keySpace` keys, so the later ones update existing rows. */
function makeBatches(count, keySpace, round) {
  return Array.from({ length: count }, (_, b) =>
    Array.from({ length: BATCH }, (_, j) => {
      const flag = makeFlag((b * BATCH + j) % keySpace, 250)
      flag.is_enabled = (b + j + round) % 2 === 0
      return flag
    }),
  )
}

/** @param {ReturnType<typeof makeFlag>[]} flags */
function syncBody(flags) {
  return JSON.stringify({
    batchId: randomUUID(),
    operations: flags.map(({ key, ...record }) => ({ action: 'insert', collection: 'flags', recordId: key, record })),
  })
}

/** @param {string} url @param {string[]} bodies */
async function postAll(url, bodies) {
  const t0 = now()
  for (const body of bodies) {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const ack = await res.json()
    if (!res.ok || ack.applied !== BATCH) throw new Error(`POST /sync: ${res.status} ${JSON.stringify(ack)}`)
  }
  return now() - t0
}

/**
 * Round trips of sequential 50-operation batches (what a sync client's drain waits for per batch), in ms.
 * @param {string} url @param {number} count
 */
async function smallBatchLatencies(url, count) {
  const bodies = Array.from({ length: count }, (_, b) =>
    syncBody(Array.from({ length: SMALL_BATCH }, (_, j) => makeFlag((b * SMALL_BATCH + j) % 2000, 250))),
  )
  const latencies = []
  for (const body of bodies) {
    const t0 = now()
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const ack = await res.json()
    if (!res.ok || ack.applied !== SMALL_BATCH) throw new Error(`POST /sync: ${res.status} ${JSON.stringify(ack)}`)
    latencies.push(now() - t0)
  }
  return latencies
}

/** @param {import('knex').Knex} knex @param {ReturnType<typeof makeFlag>[][]} batches */
async function upsertAll(knex, batches) {
  const t0 = now()
  for (const flags of batches) {
    const at = Date.now()
    const rows = flags.map((flag, i) => ({
      scope: '',
      key: flag.key,
      data: JSON.stringify(flag),
      revision: i,
      updated_at: at,
    }))
    await upsertBaselineRows(knex, rows)
  }
  return now() - t0
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const batchesPerRound = quick ? 8 : 30
  const rounds = quick ? 3 : 5
  const keySpace = (batchesPerRound * BATCH) / 2
  const server = await startCli(RECEIVER_CLI)
  const tmp = tempDir('receiver-baseline')
  const bare = spawnNode(join(benchDir, 'servers/baseline-server.mjs'), [
    'sync-upsert',
    join(tmp.dir, 'bare-http.sqlite'),
  ])
  const db = await openDatabase(`sqlite:${join(tmp.dir, 'baseline.sqlite')}`)
  try {
    const bareUrl = `${(await bare.waitFor(/listening on (http:\/\/[\d.:]+)/))[1]}/sync`
    new FlagStore(db) // same pragmas as the receiver's database
    await createBaselineTable(db.knex)
    const url = `${server.url}/sync`
    // Warm up all three paths (JIT, SQLite page cache).
    const warm = makeBatches(2, keySpace, 99)
    await postAll(url, warm.map(syncBody))
    await postAll(bareUrl, warm.map(syncBody))
    await upsertAll(db.knex, warm)

    /** @type {number[]} */ const ours = []
    /** @type {number[]} */ const http = []
    /** @type {number[]} */ const write = []
    /** @type {number[]} */ const ratios = []
    /** @type {number[]} */ const writeRatios = []
    for (let round = 0; round < rounds; round++) {
      const batches = makeBatches(batchesPerRound, keySpace, round)
      // The same operations for both servers, each body with its own batch id (the receiver dedupes on it).
      const bodies = batches.map(syncBody)
      const bareBodies = batches.map(syncBody)
      const rows = batchesPerRound * BATCH
      // Alternating which server goes first, so neither always runs right after the in-process writes.
      let a = 0
      let b = 0
      if (round % 2 === 0) {
        a = await postAll(url, bodies)
        b = await postAll(bareUrl, bareBodies)
      } else {
        b = await postAll(bareUrl, bareBodies)
        a = await postAll(url, bodies)
      }
      const c = await upsertAll(db.knex, batches)
      ours.push(rows / (a / 1000))
      http.push(rows / (b / 1000))
      write.push(rows / (c / 1000))
      ratios.push(b / a)
      writeRatios.push(c / a)
      log(
        `receiver round ${round + 1}: POST /sync ${Math.round(ours.at(-1) ?? 0)} rows/s, bare node:http + upsert ${Math.round(http.at(-1) ?? 0)} rows/s, upsert in-process ${Math.round(write.at(-1) ?? 0)} rows/s`,
      )
    }
    // Not part of the ratio: the per-batch latency the client's drain of small batches pays.
    await smallBatchLatencies(url, 20) // warm-up
    const small = await smallBatchLatencies(url, quick ? 100 : 300)
    const smallMedian = median(small)
    log(
      `receiver: ${SMALL_BATCH}-operation batches, round trip median ${smallMedian.toFixed(2)} ms, p90 ${percentile(small, 90).toFixed(2)} ms`,
    )

    const value = median(ours)
    const msPerBatch = (/** @type {number} */ rowsPerS) => (BATCH / rowsPerS) * 1000
    const hop = msPerBatch(median(http)) - msPerBatch(median(write))
    const common = `${batchesPerRound} sequential batches of ${BATCH} flag inserts/upserts per round (half update existing rows), ${rounds} rounds; ours = POST /sync to the receiver CLI (SQLite): body read, validated, deduped on its batch id, each flag's JSON stored once (change-log row) and its head (scope, key, revision) moved, one transaction, then the ack; ${spread(ours)} rows/s`
    return [
      row({
        id: 'receiver.apply500.ratio',
        value,
        unit: 'rows/s',
        baseline: median(http),
        ratio: median(ratios),
        goal: atLeast(0.6, 'ratio'),
        note: `${common}; baseline = the same bodies from the same fetch loop to a bare node:http server in its own process that reads the body, JSON.parse()s it and upserts the rows in one knex multi-row statement in one transaction into a table with the flags table's pre-0004 columns and key (scope, key, data, revision, updated_at), same pragmas, and answers {applied}: ${spread(http)} rows/s; the order of the two alternates per round; ratio = median of the per-round ratios (${spread(ratios, 3)})`,
        extra: {
          runs: { ours, baseline: http },
          ratios,
          batch50_round_trip_ms: { median: smallMedian, p90: percentile(small, 90) },
        },
      }),
      row({
        id: 'receiver.apply500.write_ratio',
        value,
        unit: 'rows/s',
        baseline: median(write),
        ratio: median(writeRatios),
        goal: null,
        note: `${common}; baseline = that upsert alone (the same rows, statement and table as receiver.apply500.ratio's bare server) in the bench process, no HTTP: ${spread(write)} rows/s; ratio = median per-round ratio (${spread(writeRatios, 3)}). No goal: the two baselines differ by the HTTP hop alone (${hop.toFixed(1)} ms of a ${msPerBatch(median(http)).toFixed(1)} ms bare round trip per batch: fetch sending ~${Math.round(Buffer.byteLength(syncBody(makeBatches(1, keySpace, 0)[0] ?? [])) / 1024)} KB, reading and parsing it), which any receiver over HTTP pays and the in-process write does not`,
        extra: { runs: { ours, baseline: write }, ratios: writeRatios, http_hop_ms_per_batch: hop },
      }),
    ]
  } finally {
    await db.close()
    await bare.stop()
    tmp.remove()
    await server.stop()
  }
}

/** "min / median / max" of a series. @param {number[]} xs @param {number} [digits] */
function spread(xs, digits = 0) {
  const sorted = [...xs].sort((x, y) => x - y)
  const f = (/** @type {number | undefined} */ x) => (x ?? 0).toFixed(digits)
  return `${f(sorted[0])} / ${f(median(xs))} / ${f(sorted.at(-1))}`
}

benchMain(import.meta.url, run)
