// receiver.apply500.base_ratio: batches of 500 flag updates through POST /sync of the real flag API (its CLI, SQLite),
// each operation carrying the baseRevision of the record it edits (no conflicts: the three-way check runs and passes),
// vs the same batches without baseRevision, alternating on the same server and database.
// receiver.apply1000.stale_ms: one batch of 1 000 updates whose every baseRevision is stale (each flag changed twice
// since, in the field the update sets: 1 000 conflicts, answered 409) vs the same 1 000 updates without baseRevision
// (applied), alternating on the same server and database.
// audit.history10k.ms: GET /api/flags/:key/history of a flag with 10 000 changes, 100-entry pages at the newest end
// and deep inside (cursor), on the same server.
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { FlagStore, openDatabase, TABLES } from '@flagsync/store'
import { atLeast, atMost, benchMain, log, row } from './lib/cli.mjs'
import { makeFlag } from './lib/flags.mjs'
import { FLAT_API_CLI, startCli, tempDir } from './lib/proc.mjs'
import { median, now } from './lib/stats.mjs'

const BATCH = 500
const HISTORY = 10_000
const STALE = 1000

/** @param {import('knex').Knex} knex @param {string[]} keys */
async function revisionsOf(knex, keys) {
  const rows = await knex(TABLES.flags).whereIn('key', keys).select('key', 'revision')
  return new Map(rows.map((r) => [r.key, Number(r.revision)]))
}

/** @param {string[]} keys @param {number} round @param {Map<string, number> | null} bases */
function updateBody(keys, round, bases) {
  return JSON.stringify({
    batchId: randomUUID(),
    operations: keys.map((key, j) => {
      const op = {
        action: 'update',
        collection: 'flags',
        recordId: key,
        changes: { is_enabled: (round + j) % 2 === 0, rollout_percentage: (round * 7 + j) % 101 },
      }
      return bases ? { ...op, baseRevision: bases.get(key) } : op
    }),
  })
}

/** @param {string} url @param {string} body */
async function post(url, body) {
  const t0 = now()
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  const ack = await res.json()
  if (!res.ok || ack.applied !== BATCH) throw new Error(`POST /sync: ${res.status} ${JSON.stringify(ack)}`)
  return now() - t0
}

/**
 * The time of one POST /sync, checked to be answered as `status` (200: all applied; 409: every operation conflicts).
 * @param {string} url @param {string} body @param {200 | 409} status
 */
async function timedPost(url, body, status) {
  const t0 = now()
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  const answer = await res.json()
  const ok = status === 200 ? answer.applied === STALE : answer.conflicts?.length === STALE
  if (res.status !== status || !ok) throw new Error(`POST /sync: ${res.status} ${JSON.stringify(answer).slice(0, 300)}`)
  return now() - t0
}

/**
 * receiver.apply1000.stale_ms: per round, two untimed batches change every flag's rollout after the bases were read,
 * then the timed pair: 1 000 updates of the rollout with those bases (409) and the same without bases (200).
 * @param {string} sync @param {import('knex').Knex} knex @param {string[]} keys @param {number} rounds
 */
async function staleRounds(sync, knex, keys, rounds) {
  const plain = []
  const stale = []
  const ratios = []
  const body = (/** @type {number} */ value, /** @type {Map<string, number> | null} */ bases) =>
    JSON.stringify({
      batchId: randomUUID(),
      operations: keys.map((key) => ({
        action: 'update',
        collection: 'flags',
        recordId: key,
        changes: { rollout_percentage: value },
        ...(bases ? { baseRevision: bases.get(key) } : {}),
      })),
    })
  await timedPost(sync, body(0, null), 200) // every rollout at a value of this sequence, none at its original
  for (let round = -1; round < rounds; round++) {
    const bases = await revisionsOf(knex, keys)
    // Fresh values each round: every write changes the flags, and every stale operation clashes with a rollout
    // changed since its base.
    const v = 20 + 4 * round
    await timedPost(sync, body(v, null), 200)
    await timedPost(sync, body(v + 1, null), 200)
    let a = 0
    let b = 0
    if (round % 2 === 0) {
      a = await timedPost(sync, body(v + 2, null), 200)
      b = await timedPost(sync, body(v + 3, bases), 409)
    } else {
      b = await timedPost(sync, body(v + 3, bases), 409)
      a = await timedPost(sync, body(v + 2, null), 200)
    }
    if (round < 0) continue // warm-up
    plain.push(a)
    stale.push(b)
    ratios.push(a / b)
    log(
      `audit stale round ${round + 1}: 1000 updates without baseRevision ${a.toFixed(1)} ms, with 1000 stale ${b.toFixed(1)} ms`,
    )
  }
  return { plain, stale, ratios }
}

/** @param {string} url @param {number} times */
async function medianGet(url, times) {
  const ms = []
  for (let i = 0; i < times; i++) {
    const t0 = now()
    const res = await fetch(url)
    const body = await res.json()
    if (!res.ok || body.entries.length === 0) throw new Error(`GET ${url}: ${res.status}`)
    ms.push(now() - t0)
  }
  return median(ms)
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const tmp = tempDir('audit-bench')
  const url = `sqlite:${join(tmp.dir, 'flags.sqlite')}`
  const keySpace = 5000
  const db = await openDatabase(url)
  const store = new FlagStore(db)
  // Seeded before the server starts: the flags, and one flag with a long history.
  for (let i = 0; i < keySpace + STALE; i += 1000) {
    await store.write(async (w) => {
      for (let j = i; j < Math.min(i + 1000, keySpace + STALE); j++) w.put(makeFlag(j, 250))
    })
  }
  const t0 = now()
  for (let i = 0; i < HISTORY; i++) {
    await store.write(async (w) => w.put({ ...makeFlag(0, 250), key: 'busy', rollout_percentage: i % 101 }), '', {
      actor: 'sdk-key',
      source: 'api:PATCH /api/flags/:key',
    })
  }
  log(`audit: seeded ${HISTORY} changes of one flag in ${Math.round(now() - t0)} ms`)
  const server = await startCli(FLAT_API_CLI, { DATABASE_URL: url })
  try {
    const sync = `${server.url}/sync`
    const keys = Array.from({ length: keySpace }, (_, i) => makeFlag(i, 250).key)
    const batchesPerRound = quick ? 4 : 10
    const rounds = quick ? 3 : 5
    // Warm-up of both paths.
    await post(sync, updateBody(keys.slice(0, BATCH), 99, null))
    await post(sync, updateBody(keys.slice(0, BATCH), 98, await revisionsOf(db.knex, keys.slice(0, BATCH))))

    const ratios = []
    const plain = []
    const based = []
    for (let round = 0; round < rounds; round++) {
      let a = 0
      let b = 0
      for (let i = 0; i < batchesPerRound; i++) {
        const slice = keys.slice(((round * batchesPerRound + i) * BATCH) % keySpace).slice(0, BATCH)
        // Alternating which goes first, so neither always runs on a warmer cache.
        const bases = await revisionsOf(db.knex, slice) // outside the timing: the client holds these
        if (i % 2 === 0) {
          a += await post(sync, updateBody(slice, round, null))
          b += await post(sync, updateBody(slice, round + 1, await revisionsOf(db.knex, slice)))
        } else {
          b += await post(sync, updateBody(slice, round, bases))
          a += await post(sync, updateBody(slice, round + 1, null))
        }
      }
      const rows = batchesPerRound * BATCH
      plain.push(rows / (a / 1000))
      based.push(rows / (b / 1000))
      ratios.push(a / b)
      log(
        `audit round ${round + 1}: without baseRevision ${Math.round(plain.at(-1) ?? 0)} rows/s, with ${Math.round(based.at(-1) ?? 0)} rows/s`,
      )
    }

    const staleKeys = Array.from({ length: STALE }, (_, i) => makeFlag(keySpace + i, 250).key)
    const staleRuns = await staleRounds(sync, db.knex, staleKeys, quick ? 5 : 11)

    const history = `${server.url}/api/flags/busy/history`
    await medianGet(history, 20) // warm-up
    const newest = await medianGet(history, quick ? 30 : 100)
    const deep = await medianGet(`${history}?cursor=${Math.floor(keySpace + HISTORY / 2)}`, quick ? 30 : 100)
    const big = await medianGet(`${history}?limit=1000`, quick ? 10 : 30)
    log(
      `audit: history page (100) newest ${newest.toFixed(2)} ms, deep ${deep.toFixed(2)} ms; limit=1000 ${big.toFixed(2)} ms`,
    )

    const sorted = [...ratios].sort((x, y) => x - y)
    return [
      row({
        id: 'receiver.apply500.base_ratio',
        value: median(based),
        unit: 'rows/s',
        baseline: median(plain),
        ratio: median(ratios),
        goal: atLeast(0.9, 'ratio'),
        note: `${batchesPerRound} pairs of 500-update batches per round over ${keySpace} flags through the flag API's POST /sync (CLI, SQLite), one with baseRevision on every operation (current revisions: the three-way check runs, no conflicts), one without, alternating order; ratio = time without / time with, median of ${rounds} rounds (min ${sorted[0]?.toFixed(3)}, max ${sorted.at(-1)?.toFixed(3)})`,
        extra: { ratios, rows_per_s: { with_base: based, without: plain } },
      }),
      row({
        id: 'receiver.apply1000.stale_ms',
        value: median(staleRuns.stale),
        unit: 'ms',
        baseline: median(staleRuns.plain),
        ratio: median(staleRuns.ratios),
        goal: atLeast(1 / 3, 'ratio'),
        note: `one POST /sync of ${STALE} updates through the flag API (CLI, SQLite, ${keySpace + STALE} flags, ${keySpace + STALE + HISTORY}+ change-log rows), every baseRevision stale (the flag's rollout changed twice since): 1 000 conflicts, answered 409; baseline = the same ${STALE} updates without baseRevision (applied); ratio = time without / time with, median of ${staleRuns.ratios.length} alternating rounds (${spreadOf(staleRuns.ratios)}); goal: at most 3× the batch without bases`,
        extra: { runs: { stale_ms: staleRuns.stale, without_ms: staleRuns.plain }, ratios: staleRuns.ratios },
      }),
      row({
        id: 'audit.history10k.ms',
        value: Math.max(newest, deep),
        unit: 'ms',
        baseline: null,
        ratio: null,
        goal: atMost(50),
        note: `GET /api/flags/:key/history of a flag with ${HISTORY} changes (flag API CLI, SQLite, ${keySpace + HISTORY} change-log rows), 100-entry pages: the slower of the newest page and a page from the middle (cursor), median of sequential requests over HTTP`,
        extra: { newest_ms: newest, deep_ms: deep, limit1000_ms: big },
      }),
    ]
  } finally {
    await server.stop()
    await db.close()
    tmp.remove()
  }
}

/** "min / median / max" of ratios. @param {number[]} xs */
function spreadOf(xs) {
  const sorted = [...xs].sort((x, y) => x - y)
  return `${(sorted[0] ?? 0).toFixed(3)} / ${median(xs).toFixed(3)} / ${(sorted.at(-1) ?? 0).toFixed(3)}`
}

benchMain(import.meta.url, run)
