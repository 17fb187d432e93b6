// receiver.apply500.ratio: batches of 500 flag upserts through POST /sync of the real receiver (its CLI, SQLite)
// vs knex upserting the same rows directly into the same schema (one multi-row statement per batch, one transaction).
// Also records (in `extra`, outside the ratio) the round trip of sequential 50-operation batches, the size a sync
// client's drain of small batches waits for.
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { FlagStore, openDatabase } from '@flagsync/store'
import { atLeast, benchMain, log, row } from './lib/cli.mjs'
import { makeFlag } from './lib/flags.mjs'
import { RECEIVER_CLI, startCli, tempDir } from './lib/proc.mjs'
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

/**
 * The baseline's table: the flags table as it was before migration 0004 made `flagsync_flags` a view of the log's
 * heads (the same columns and primary key), so the baseline does the same work as before: one upsert of the rows
 * with their JSON.
 */
const BASELINE_TABLE = 'baseline_flags'

/** @param {import('knex').Knex} knex */
async function createBaselineTable(knex) {
  await knex.schema.createTable(BASELINE_TABLE, (t) => {
    t.string('scope', 64).notNullable().defaultTo('')
    t.string('key', 100).notNullable()
    t.text('data').notNullable()
    t.bigInteger('revision').notNullable()
    t.bigInteger('updated_at').notNullable()
    t.primary(['scope', 'key'])
  })
}

/** @param {import('knex').Knex} knex @param {ReturnType<typeof makeFlag>[][]} batches */
async function upsertAll(knex, batches) {
  const t0 = now()
  for (const flags of batches) {
    const at = Date.now()
    await knex.transaction(async (trx) => {
      const rows = flags.map((flag, i) => ({
        scope: '',
        key: flag.key,
        data: JSON.stringify(flag),
        revision: i,
        updated_at: at,
      }))
      await trx(BASELINE_TABLE).insert(rows).onConflict(['scope', 'key']).merge(['data', 'revision', 'updated_at'])
    })
  }
  return now() - t0
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const batchesPerRound = quick ? 8 : 30
  const rounds = 3
  const keySpace = (batchesPerRound * BATCH) / 2
  const server = await startCli(RECEIVER_CLI)
  const tmp = tempDir('receiver-baseline')
  const db = await openDatabase(`sqlite:${join(tmp.dir, 'baseline.sqlite')}`)
  try {
    new FlagStore(db) // same pragmas as the receiver's database
    await createBaselineTable(db.knex)
    const url = `${server.url}/sync`
    // Warm up both paths (JIT, SQLite page cache).
    const warm = makeBatches(2, keySpace, 99)
    await postAll(url, warm.map(syncBody))
    await upsertAll(db.knex, warm)

    const ours = []
    const base = []
    for (let round = 0; round < rounds; round++) {
      const batches = makeBatches(batchesPerRound, keySpace, round)
      const bodies = batches.map(syncBody)
      const rows = batchesPerRound * BATCH
      const a = await postAll(url, bodies)
      const b = await upsertAll(db.knex, batches)
      ours.push(rows / (a / 1000))
      base.push(rows / (b / 1000))
      log(
        `receiver round ${round + 1}: POST /sync ${Math.round(ours.at(-1) ?? 0)} rows/s, knex ${Math.round(base.at(-1) ?? 0)} rows/s`,
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
    const baseline = median(base)
    return [
      row({
        id: 'receiver.apply500.ratio',
        value,
        unit: 'rows/s',
        baseline,
        ratio: value / baseline,
        goal: atLeast(0.6, 'ratio'), // issue 18 (was 0.5)
        note: `${batchesPerRound} sequential batches of ${BATCH} flag inserts/upserts per round (half update existing rows), median of ${rounds}; baseline = knex multi-row upsert per batch in one transaction into a table with the flags table's pre-0004 columns and key (scope, key, data, revision, updated_at), same pragmas, in-process; ours stores each flag's JSON once (change-log row) and moves its head (scope, key, revision)`,
        extra: {
          runs: { ours, baseline: base },
          batch50_round_trip_ms: { median: smallMedian, p90: percentile(small, 90) },
        },
      }),
    ]
  } finally {
    await db.close()
    tmp.remove()
    await server.stop()
  }
}

benchMain(import.meta.url, run)
