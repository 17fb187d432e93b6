// The page side of bench/browser.mjs: the shipped browser bundle of the sync client against raw IndexedDB, and
// compaction / evaluation against their bare baselines, all in this one page. Node drives it with page.evaluate
// (`window.bench.<name>(...)`) and reads the figures back; nothing here talks to anything but this page's origin.
import { compact, createSyncClient } from './sync-client.browser.min.js'
import { evaluate, handWritten, lastPerRecord, randomOperations, TARGETED_FLAG, users } from './workloads.js'

/**
 * Durability of read-write transactions: null leaves each side at its default (the client's `durability` option
 * unset, the raw baseline's transactions without the hint, i.e. the browser's), 'relaxed' / 'strict' set it on both
 * (the client through its `durability` option, the baseline on each transaction it opens).
 * @param {IDBTransactionDurability | null} mode
 */
const rawOptions = (mode) => (mode === null ? undefined : { durability: mode })
/** @param {IDBTransactionDurability | null} mode */
const clientOptions = (mode) => (mode === null ? {} : { durability: mode })

/** @param {IDBRequest | IDBOpenDBRequest} request */
const settle = (request) =>
  new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })

/** @param {IDBTransaction} tx */
const committed = (tx) =>
  new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve(undefined)
    tx.onerror = () => reject(tx.error)
    tx.onabort = () => reject(tx.error ?? new Error('transaction aborted'))
  })

/** @param {string} name */
async function deleteDatabase(name) {
  const request = indexedDB.deleteDatabase(name)
  await new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(undefined)
    request.onerror = () => reject(request.error)
    request.onblocked = () => resolve(undefined)
  })
}

/** A bare `ops` store keyed by an auto-increment `id`, as the client's outbox declares it (`++id`). @param {string} name */
async function openRaw(name) {
  await deleteDatabase(name)
  const request = indexedDB.open(name, 1)
  request.onupgradeneeded = () => request.result.createObjectStore('ops', { keyPath: 'id', autoIncrement: true })
  return /** @type {Promise<IDBDatabase>} */ (settle(request))
}

let runs = 0
/** @param {string} prefix */
const freshName = (prefix) => `${prefix}-${Date.now()}-${runs++}`

/** @param {number} i */
const updateOp = (i) => ({
  action: 'update',
  collection: 'flags',
  recordId: `flag-${i % 500}`,
  changes: { is_enabled: i % 2 === 0 },
})

/** @param {number} n @param {IDBTransactionDurability | null} mode */
async function enqueueOurs(n, mode) {
  const dbName = freshName('bench-enqueue')
  const client = createSyncClient({
    webhookUrl: `${location.origin}/sync`,
    dbName,
    syncIntervalMs: 3_600_000,
    ...clientOptions(mode),
  })
  try {
    await client.pending() // opens the database outside the timing
    const t0 = performance.now()
    for (let i = 0; i < n; i++) await client.update('flags', `flag-${i % 500}`, { is_enabled: i % 2 === 0 })
    const ms = performance.now() - t0
    if ((await client.outbox()).length !== n) throw new Error('not every update was queued')
    return n / (ms / 1000)
  } finally {
    await client.close()
    await deleteDatabase(dbName)
  }
}

/** Raw IndexedDB: one `add` per read-write transaction, awaited until committed. @param {number} n @param {IDBTransactionDurability | null} mode */
async function enqueueRaw(n, mode) {
  const name = freshName('bench-raw')
  const db = await openRaw(name)
  const options = rawOptions(mode)
  try {
    const t0 = performance.now()
    for (let i = 0; i < n; i++) {
      const tx = db.transaction('ops', 'readwrite', options)
      tx.objectStore('ops').add({ op: updateOp(i), queuedAt: Date.now() })
      await committed(tx)
    }
    return n / ((performance.now() - t0) / 1000)
  } finally {
    db.close()
    await deleteDatabase(name)
  }
}

/** `n` outbox rows, each inserting a different flag (nothing compacts away), shaped as the client stores them. @param {number} n */
function queuedRows(n) {
  const queuedAt = Date.now()
  return Array.from({ length: n }, (_, i) => ({
    op: {
      action: 'insert',
      collection: 'flags',
      recordId: `drain-${i}`,
      record: { is_enabled: i % 2 === 0, rollout_percentage: null, description: `queued ${i}`, rules: [] },
    },
    queuedAt,
  }))
}

/** Adds rows to the `ops` store of an open database in one transaction. @param {IDBDatabase} db @param {object[]} rows */
async function addRows(db, rows) {
  const tx = db.transaction('ops', 'readwrite')
  const store = tx.objectStore('ops')
  for (const row of rows) store.add(row)
  await committed(tx)
}

/**
 * Queues `n` inserts and times `flush()` to this origin's /sync (the flat API's receiver).
 * @param {number} n @param {number} batchSize @param {IDBTransactionDurability | null} mode
 */
async function drainOurs(n, batchSize, mode) {
  const dbName = freshName('bench-drain')
  const client = createSyncClient({
    webhookUrl: `${location.origin}/sync`,
    dbName,
    batchSize,
    syncIntervalMs: 3_600_000,
    ...clientOptions(mode),
  })
  try {
    await client.pending() // creates the outbox with the client's own schema
    // Queue fast through a second connection to the client's database; pending() checks the client sees the rows.
    const db = /** @type {IDBDatabase} */ (await settle(indexedDB.open(dbName)))
    try {
      await addRows(db, queuedRows(n))
    } finally {
      db.close()
    }
    const seen = await client.pending()
    if (seen !== n) throw new Error(`the client sees ${seen} of ${n} seeded operations: has the outbox layout changed?`)
    const t0 = performance.now()
    const result = await client.flush()
    const ms = performance.now() - t0
    if (result.delivered !== n || result.pending !== 0) {
      throw new Error(`flush delivered ${result.delivered} of ${n}: ${JSON.stringify(await client.status())}`)
    }
    return n / (ms / 1000)
  } finally {
    await client.close()
    await deleteDatabase(dbName)
  }
}

/** Raw IndexedDB: read and delete the same rows, `page` per read-write transaction. @param {number} n @param {number} page @param {IDBTransactionDurability | null} mode */
async function drainRaw(n, page, mode) {
  const name = freshName('bench-raw')
  const db = await openRaw(name)
  try {
    await addRows(db, queuedRows(n))
    const options = rawOptions(mode)
    let read = 0
    const t0 = performance.now()
    for (;;) {
      const tx = db.transaction('ops', 'readwrite', options)
      const store = tx.objectStore('ops')
      const rows = /** @type {Array<{id: number}>} */ (await settle(store.getAll(null, page)))
      for (const row of rows) store.delete(row.id)
      await committed(tx)
      if (rows.length === 0) break
      read += rows.length
    }
    const ms = performance.now() - t0
    if (read !== n) throw new Error(`raw drain read ${read} of ${n}`)
    return n / (ms / 1000)
  } finally {
    db.close()
    await deleteDatabase(name)
  }
}

/** @type {any[] | undefined} */
let compactionOps

/** ops/s of one pass, after a full GC (the page runs with --expose-gc). @param {(ops: any[]) => unknown[]} fn */
function timeOnce(fn) {
  const ops = /** @type {any[]} */ (compactionOps)
  /** @type {any} */
  globalThis.gc?.()
  const t0 = performance.now()
  const out = fn(ops).length
  const rate = ops.length / ((performance.now() - t0) / 1000)
  if (out < 0) throw new Error('unreachable')
  return rate
}

/** `compact()` of the shipped bundle vs the bare Map pass, interleaved. @param {number} n @param {number} rounds */
function compaction(n, rounds) {
  compactionOps = randomOperations(n)
  const out = compact(compactionOps).length
  lastPerRecord(compactionOps) // warm-up
  const ours = []
  const baseline = []
  for (let r = 0; r < rounds; r++) {
    ours.push(timeOnce(compact))
    baseline.push(timeOnce(lastPerRecord))
  }
  compactionOps = undefined
  return { ours, baseline, out }
}

/** Evaluations per second of `fn` over the users, for about `ms` milliseconds. @param {(ctx: any) => unknown} fn @param {any[]} contexts @param {number} ms */
function rate(fn, contexts, ms) {
  const mask = contexts.length - 1
  let done = 0
  let sink = 0
  const t0 = performance.now()
  let elapsed = 0
  while (elapsed < ms) {
    for (let i = 0; i < 16_384; i++) {
      if (fn(contexts[(done + i) & mask]) !== undefined) sink++
    }
    done += 16_384
    elapsed = performance.now() - t0
  }
  if (sink !== done) throw new Error('an evaluation returned nothing')
  return done / (elapsed / 1000)
}

/** `evaluate()` of the targeted flag vs the same decision hand-coded, interleaved. @param {number} ms @param {number} rounds */
function evaluation(ms, rounds) {
  const contexts = users()
  const ours = (/** @type {any} */ ctx) => evaluate(TARGETED_FLAG, ctx).value
  for (const ctx of contexts.slice(0, 5000)) {
    if (ours(ctx) !== handWritten(ctx)) throw new Error(`evaluate and the baseline disagree for ${JSON.stringify(ctx)}`)
  }
  rate(ours, contexts, 300)
  rate(handWritten, contexts, 300)
  const o = []
  const b = []
  for (let i = 0; i < rounds; i++) {
    o.push(rate(ours, contexts, ms))
    b.push(rate(handWritten, contexts, ms))
  }
  return { ours: o, baseline: b }
}
/** @type {any} */
window.bench = {
  enqueueOurs,
  enqueueRaw,
  drainOurs,
  drainRaw,
  compaction,
  evaluation,
  userAgent: () => navigator.userAgent,
}
