// receiver.apply500.base_ratio: batches of 500 flag updates through POST /sync of the real flag API (its CLI, SQLite),
// each operation carrying the baseRevision of the record it edits (no conflicts: the three-way check runs and passes),
// vs the same batches without baseRevision, alternating on the same server and database.
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
  for (let i = 0; i < keySpace; i += 1000) {
    await store.write(async (w) => {
      for (let j = i; j < Math.min(i + 1000, keySpace); j++) w.put(makeFlag(j, 250))
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

benchMain(import.meta.url, run)
