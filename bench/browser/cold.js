// The cold-start page of bench/browser.mjs, loaded from the shipped bundle. `store` picks where the flag client keeps
// its cache: `ls` (the default options: localStorage) or `idb` (`localStorage: null`: IndexedDB), each in a database
// of its own.
//   ?mode=seed&store=S&flags=N&ops=M  online: the flag client takes the server's N flags from /stream and caches
//                             them; M flag edits are queued in the sync client's outbox (never delivered).
//   ?mode=measure&store=S     both clients offline: how long from navigation start until the first getFlag
//                             answers from the cache, and until the queued edits show on top.
//   ?mode=raw&store=S         the platform's floor for the same answer, no client: the cached set read by hand
//                             (ls: localStorage.getItem + JSON.parse; idb: open the database, get the one record).
// The outcome lands in window.coldResult (or window.coldError).
import { createFlagClient, createSyncClient, manualOnlineSource } from './sync-client.browser.min.js'

const moduleStartMs = performance.now()
const params = new URLSearchParams(location.search)
const STORE = params.get('store') === 'idb' ? 'idb' : 'ls'
const DB = `bench-cold-${STORE}`
/** What the flag client is given besides its stream URL: nothing for the default (localStorage), or no storage. */
const CACHE_OPTIONS = STORE === 'idb' ? { localStorage: null } : {}
const FIRST_KEY = 'flag-00000'

/** @param {number} i */
const flagKey = (i) => `flag-${String(i).padStart(5, '0')}`

/** Where the page is, for the driver's error message when it stalls. @param {string} step */
const progress = (step) => {
  /** @type {any} */
  window.coldProgress = step
}

async function seed() {
  const count = Number(params.get('flags'))
  const queued = Number(params.get('ops'))
  // One client at a time: the cache is filled from the stream first, then the edits are queued through the sync
  // client alone (no stream needed for that).
  const flags = createFlagClient({ streamUrl: `${location.origin}/stream`, dbName: DB, ...CACHE_OPTIONS })
  await flags.ready()
  progress('ready')
  const deadline = performance.now() + 20_000
  while (flags.allFlags().length < count && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  if (flags.allFlags().length !== count) throw new Error(`the stream gave ${flags.allFlags().length} of ${count} flags`)
  await flags.close() // saves the complete set
  progress('cached')
  // Not started, so nothing is delivered: the edits stay queued for the offline start.
  const sync = createSyncClient({ webhookUrl: `${location.origin}/sync`, dbName: DB, syncIntervalMs: 3_600_000 })
  for (let i = 0; i < queued; i++) {
    await sync.update('flags', flagKey(i % count), { description: `queued edit ${i}` })
    if (i % 100 === 0) progress(`queued ${i}`)
  }
  await sync.close()
  return { flags: count, queued }
}

async function measure() {
  const online = manualOnlineSource(false)
  const sync = createSyncClient({ webhookUrl: `${location.origin}/sync`, dbName: DB, online })
  const flags = createFlagClient({
    streamUrl: `${location.origin}/stream`,
    dbName: DB,
    syncClient: sync,
    online,
    ...CACHE_OPTIONS,
  })
  // From localStorage the set is there before createFlagClient returns; from IndexedDB only after an await.
  const answeredAtCreation = flags.status().source === 'cache'
  await flags.ready()
  const first = flags.getFlag(FIRST_KEY)
  const firstAnswerMs = performance.now()
  if (!first) throw new Error(`${FIRST_KEY} is not in the cached set`)
  const source = flags.status().source
  // The queued edit of FIRST_KEY (one edit per key): shows once the outbox has been read on top of the cache.
  const expected = 'queued edit 0'
  const edited = () => flags.getFlag(FIRST_KEY)?.description === expected
  const pendingVisibleMs = edited()
    ? performance.now()
    : await new Promise((resolve) => {
        const timer = setTimeout(() => {
          unsubscribe()
          resolve(null)
        }, 5_000)
        const unsubscribe = flags.subscribe(() => {
          if (!edited()) return
          unsubscribe()
          clearTimeout(timer)
          resolve(performance.now())
        })
      })
  const queued = await sync.pending()
  const navigation = /** @type {PerformanceNavigationTiming | undefined} */ (
    performance.getEntriesByType('navigation')[0]
  )
  const result = {
    firstAnswerMs,
    pendingVisibleMs,
    moduleStartMs,
    answeredAtCreation,
    documentResponseEndMs: navigation?.responseEnd ?? null,
    flags: flags.allFlags().length,
    queued,
    source,
  }
  await flags.close()
  await sync.close()
  return result
}

/** @param {IDBRequest} request */
const settled = (request) =>
  new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })

/**
 * The same answer with nothing but the platform. ls: the flag client's localStorage copy (`<dbName>:flags`, the
 * last saved set as JSON, its `id` the stream URL) read and parsed by hand. idb: its IndexedDB database
 * (`<dbName>:flags`, version 10, store `sets`, one record per stream URL) opened and read by hand. Either way the
 * flag is then looked up in the set's array.
 */
async function raw() {
  const id = `${location.origin}/stream`
  let openedMs = performance.now()
  let saved
  if (STORE === 'ls') {
    saved = JSON.parse(localStorage.getItem(`${DB}:flags`) ?? 'null')
    if (saved?.id !== id) throw new Error(`the localStorage copy is ${saved?.id}'s set, not ${id}'s`)
  } else {
    const db = /** @type {IDBDatabase} */ (await settled(indexedDB.open(`${DB}:flags`, 10)))
    openedMs = performance.now()
    saved = await settled(db.transaction('sets', 'readonly').objectStore('sets').get(id))
    db.close()
  }
  const flag = saved?.flags.find((/** @type {{ key: string }} */ f) => f.key === FIRST_KEY)
  const firstAnswerMs = performance.now()
  if (!flag) throw new Error(`${FIRST_KEY} is not in the cached set (${STORE})`)
  return { firstAnswerMs, openedMs, moduleStartMs, flags: saved.flags.length }
}

const w = /** @type {any} */ (window)
const mode = params.get('mode')
;(mode === 'seed' ? seed() : mode === 'raw' ? raw() : measure()).then(
  (result) => {
    w.coldResult = result
  },
  (error) => {
    w.coldError = error instanceof Error ? error.stack : String(error)
  },
)
