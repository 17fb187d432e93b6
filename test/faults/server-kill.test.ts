/**
 * Kill -9 the server (the compiled CLI, a real process) while a sync
 * client delivers 10 000 operations in batches, restart it on the same port
 * and database each time, and check that the store ends exactly where the
 * operations say: nothing lost, nothing applied twice, no partial batch.
 *
 * The app keeps writing while the client delivers, so the queue grows while
 * the server is down. The crashes (by the first attempt of a given batch):
 * - `in-flight`: the server is killed at a random point of a batch's usual
 *   round trip after the request left (whether it got to commit is up to the
 *   race; both outcomes must end the same).
 * - `mid-transaction` (PostgreSQL): the test holds the row lock of a flag the
 *   batch deletes, so the server's transaction stops at that DELETE, after
 *   the batch's upserts and its batch id were written; the server is killed
 *   there. The retry must be applied (not answered `duplicate`).
 * - `after-commit`: the server committed and answered, and is killed before
 *   the client reads the answer; the retry must be answered `duplicate`.
 *
 * Then the served flags must equal a pure model of the 10 000 operations, the
 * applied batch ids must be exactly the batches the client sent (each with
 * its full operation count), and the change log, read in revision order, must
 * split into one contiguous run per batch holding exactly the changes of that
 * whole batch applied once.
 */
import type { Operation } from '@flagsync/protocol'
import { openDatabase, TABLES } from '@flagsync/store'
import { createSyncClient, manualOnlineSource, type SyncClient } from '@flagsync/sync-client'
import { createTestDatabase, DIALECTS, type Dialect, type TestDatabase } from '@flagsync/test-support/databases'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import {
  applyBatchToModel,
  applyOp,
  type ExpectedChange,
  type FlagState,
  flagWorkload,
  type ModelFlag,
  seededRandom,
  sortByKey,
  type WireOp,
} from './flag-model.js'

const CLI = 'packages/flat-api/dist/cli.js'
const OPERATIONS = 10_000
const KEYS = 1_500
const BATCH_SIZE = 100
type CrashKind = 'in-flight' | 'mid-transaction' | 'after-commit'

/** Each crash fires on the first attempt of the first new batch at or after `from` (send order, from 0) that fits. */
const CRASH_PLANS: Record<Dialect, Array<{ kind: CrashKind; from: number }>> = {
  sqlite: [
    { kind: 'in-flight', from: 10 },
    { kind: 'after-commit', from: 40 },
  ],
  postgres: [
    { kind: 'in-flight', from: 10 },
    { kind: 'mid-transaction', from: 25 },
    { kind: 'after-commit', from: 45 },
  ],
}

interface Attempt {
  batchId: string
  /** Index of the batch in first-send order. */
  batch: number
  /** The server process this attempt was made against (1 = the first). */
  generation: number
  status?: number
  body?: { batchId?: string; applied?: number; duplicate?: boolean; revision?: number }
  error?: string
}

interface Crash {
  kind: CrashKind
  batchId: string
  /** The server process that was killed. */
  generation: number
  /** What the server answered before it was killed (after-commit). */
  answer?: Attempt['body']
  /** Ms between sending the request and killing the server (in-flight). */
  delay?: number
  /** The statement the server was blocked in when it was killed (mid-transaction). */
  blockedIn?: string
}

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup()
    } catch {
      // keep cleaning up
    }
  }
})

/** Settles like `promise`, or rejects after `timeoutMs`. */
async function within<T>(what: string, promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/** A PostgreSQL client that is closed by the test's cleanup. */
async function pgClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  cleanups.push(() => client.end())
  return client
}

describe.each(DIALECTS)('kill -9 of the server while a client delivers 10 000 operations (%s)', (dialect) => {
  it('ends with exactly the intended flags: nothing lost, nothing applied twice, no partial batch', async () => {
    const started = Date.now()
    const db: TestDatabase = await createTestDatabase(dialect)
    cleanups.push(() => db.drop())

    let generation = 1
    let server: SpawnedServer = await spawnServer(CLI, { DATABASE_URL: db.url })
    const first = server
    cleanups.push(() => first.kill('SIGKILL'))
    const port = Number(new URL(first.url).port)
    const base = first.url
    const restart = async () => {
      // The old server is dead: whatever answers from now on is the next one. Counted from the spawn, since the CLI
      // binds its port (and holds requests) before it logs that it is listening.
      generation++
      const next = await spawnServer(CLI, { DATABASE_URL: db.url, PORT: String(port) })
      cleanups.push(() => next.kill('SIGKILL'))
      server = next
      expect(next.url).toBe(base)
    }
    const kill = async (): Promise<void> => {
      const victim = server
      victim.kill('SIGKILL')
      expect(await victim.exited).toBe('SIGKILL')
    }

    // ---- the intended history -------------------------------------------------------------
    const { ops, final } = flagWorkload(OPERATIONS, KEYS, dialect === 'sqlite' ? 7 : 11)
    const counts = { insert: 0, update: 0, delete: 0 }
    for (const op of ops) counts[op.action]++
    expect(counts.update).toBeGreaterThan(2_000)
    expect(counts.delete).toBeGreaterThan(500)

    // ---- a fetch that records every attempt and crashes the server as planned --------------
    const plan = CRASH_PLANS[dialect]
    const batches = new Map<string, Operation[]>() // first-send order
    const attempts: Attempt[] = []
    const crashes: Crash[] = []
    const signals: Array<{ resolve: () => void; reject: (error: unknown) => void }> = []
    const crashed = plan.map((_, i) => new Promise<void>((resolve, reject) => (signals[i] = { resolve, reject })))
    for (const c of crashed) c.catch(() => {}) // awaited in order below
    const changedRetries: string[] = []
    const roundTrips: number[] = []
    const realFetch = globalThis.fetch
    const random = seededRandom(dialect === 'sqlite' ? 3 : 5)

    /** The flags the server holds once the batches before `index` are applied. */
    const serverStateBefore = (index: number): FlagState => {
      const state: FlagState = new Map()
      for (const id of [...batches.keys()].slice(0, index)) {
        for (const op of batches.get(id) ?? []) applyOp(state, op as WireOp)
      }
      return state
    }
    /** A flag the batch deletes that exists before it, when the batch also upserts flags. */
    const deletedByBatch = (index: number, operations: Operation[]): string | undefined => {
      const changes = applyBatchToModel(serverStateBefore(index), operations as WireOp[])
      if (!changes.some((c) => c.flag !== null)) return undefined
      return changes.find((c) => c.flag === null)?.key
    }

    /** Sends for real and records the answer. */
    const send = async (attempt: Attempt, input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      const sentAt = performance.now()
      try {
        const res = await realFetch(input, init)
        const text = await res.text()
        attempt.status = res.status
        attempt.body = text === '' ? undefined : JSON.parse(text)
        if (res.status === 200) roundTrips.push(performance.now() - sentAt)
        return new Response(text, { status: res.status, headers: res.headers })
      } catch (error) {
        attempt.error = String(error)
        throw error
      }
    }

    const crashInFlight = async (crash: Crash, response: Promise<Response>) => {
      // Handled from the start: the request may fail while we are still waiting to kill the server.
      response.catch(() => {})
      // At a random point of a batch's usual round trip: somewhere between sending and the commit.
      const sorted = [...roundTrips].sort((x, y) => x - y)
      crash.delay = Math.floor(random() * (sorted[Math.floor(sorted.length / 2)] ?? 20))
      await new Promise((resolve) => setTimeout(resolve, crash.delay))
      await kill()
      await response.catch(() => {})
    }

    const crashMidTransaction = async (crash: Crash, victim: string, request: () => Promise<Response>) => {
      const locker = await pgClient(db.url)
      const probe = await pgClient(db.url)
      const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid
      await locker.query('BEGIN')
      const locked = await locker.query(`SELECT key FROM ${TABLES.flags} WHERE scope = '' AND key = $1 FOR UPDATE`, [
        victim,
      ])
      expect(locked.rowCount).toBe(1)
      const response = request()
      response.catch(() => {})
      // The server's transaction (lock_timeout 5 s) waits for our row lock: it is inside the batch. Only a wait on
      // our transaction counts: a backend can also wait a moment on autovacuum's relation lock, in any statement.
      const blocked = await until(
        'the server to block on our row lock inside the batch transaction',
        async () =>
          (
            await probe.query<{ pid: number; query: string }>(
              `SELECT pid, query FROM pg_stat_activity
               WHERE datname = current_database() AND $1::int = ANY(pg_blocking_pids(pid))`,
              [lockerPid],
            )
          ).rows[0],
        4_000,
      )
      crash.blockedIn = blocked.query
      await kill()
      await locker.query('ROLLBACK')
      // The dead server's backend finds its client gone and ends without a commit.
      await until(
        "the dead server's backend to end",
        async () =>
          (await probe.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [blocked.pid])).rowCount === 0
            ? true
            : undefined,
        10_000,
      )
      await response.catch(() => {})
    }

    const recordingFetch: typeof fetch = async (input, init) => {
      const sent = JSON.parse(String(init?.body)) as { batchId: string; operations: Operation[] }
      const isNew = !batches.has(sent.batchId)
      if (isNew) batches.set(sent.batchId, sent.operations)
      else if (JSON.stringify(sent.operations) !== JSON.stringify(batches.get(sent.batchId))) {
        changedRetries.push(sent.batchId) // asserted below: a retry must send the same batch
      }
      const index = [...batches.keys()].indexOf(sent.batchId)
      const attempt: Attempt = { batchId: sent.batchId, batch: index, generation }
      attempts.push(attempt)

      const next = plan[crashes.length]
      const victim =
        isNew && next?.kind === 'mid-transaction' && index >= next.from
          ? deletedByBatch(index, sent.operations)
          : undefined
      if (!isNew || !next || index < next.from || (next.kind === 'mid-transaction' && !victim)) {
        return send(attempt, input, init)
      }

      const crash: Crash = { kind: next.kind, batchId: sent.batchId, generation }
      const signal = signals[crashes.length]
      crashes.push(crash)
      try {
        if (crash.kind === 'after-commit') {
          // Committed and answered, but the server dies before the answer reaches the client.
          await send(attempt, input, init)
          crash.answer = attempt.body
          await kill()
        } else if (crash.kind === 'in-flight') {
          await crashInFlight(crash, send(attempt, input, init))
        } else {
          await crashMidTransaction(crash, victim as string, () => send(attempt, input, init))
        }
        signal?.resolve()
      } catch (error) {
        signal?.reject(error)
      }
      attempt.error ??= 'killed: whatever the server answered never reached the client'
      throw new TypeError(`fetch failed: the server was killed (${crash.kind})`)
    }

    const client: SyncClient = createSyncClient({
      webhookUrl: `${base}/sync`,
      indexedDB: new IDBFactory(),
      IDBKeyRange,
      fetch: recordingFetch,
      online: manualOnlineSource(true),
      locks: null,
      broadcastChannel: null,
      batchSize: BATCH_SIZE,
      syncIntervalMs: 200,
      requestTimeoutMs: 10_000,
      retry: { baseMs: 50, maxMs: 500 },
    })
    cleanups.push(() => client.close())

    // ---- the app writes while the client delivers; the server crashes meanwhile ------------
    client.start()
    let enqueuedMs = 0
    const writing = (async () => {
      for (const op of ops) await client.enqueue(op as Operation)
      enqueuedMs = Date.now() - started
    })()
    for (const [i, signal] of crashed.entries()) {
      await within(`crash ${i + 1} (${plan[i]?.kind})`, signal, 60_000)
      const down = attempts.length
      // The client keeps retrying against the dead server (connection refused) before it comes back.
      await until(
        'a failed retry while the server is down',
        () => (attempts.slice(down).some((a) => a.error !== undefined) ? true : undefined),
        15_000,
      )
      await restart()
    }
    await within('the writes', writing, 60_000)
    await until(
      'the outbox to drain',
      async () => ((await client.status()).pending === 0 && (await client.outbox()).length === 0 ? true : undefined),
      60_000,
    )
    const deliveredMs = Date.now() - started

    // ---- the crashes happened where intended -----------------------------------------------
    expect(crashes.map((c) => c.kind)).toEqual(plan.map((p) => p.kind))
    expect(changedRetries).toEqual([])
    // Every attempt that got an answer got a 200 (first time or as a duplicate), never a 4xx/5xx.
    expect(attempts.filter((a) => a.status !== undefined && a.status !== 200)).toEqual([])
    const answersTo = (crash: Crash) =>
      attempts.filter((a) => a.batchId === crash.batchId && a.status === 200 && !a.error).map((a) => a.body)
    const size = (crash: Crash) => batches.get(crash.batchId)?.length
    const outcomes: string[] = []
    for (const crash of crashes) {
      const answers = answersTo(crash)
      expect(answers).toHaveLength(1) // acknowledged once, by a server started after the crash
      expect(attempts.find((a) => a.batchId === crash.batchId && a.body === answers[0])?.generation).toBe(
        crash.generation + 1,
      )
      if (crash.kind === 'after-commit') {
        // Applied in full before the kill; the retry changes nothing.
        expect(crash.answer).toEqual({ batchId: crash.batchId, applied: size(crash), revision: expect.any(Number) })
        expect(answers[0]).toEqual({ batchId: crash.batchId, applied: 0, duplicate: true })
      } else if (crash.kind === 'mid-transaction') {
        // Killed inside the transaction, after the upserts, at the DELETE: rolled back, so the retry applies it.
        expect(crash.blockedIn).toMatch(/^delete from "flagsync_heads"/i)
        expect(answers[0]).toEqual({ batchId: crash.batchId, applied: size(crash), revision: expect.any(Number) })
      } else {
        expect(answers[0]).toEqual(
          answers[0]?.duplicate
            ? { batchId: crash.batchId, applied: 0, duplicate: true }
            : { batchId: crash.batchId, applied: size(crash), revision: expect.any(Number) },
        )
      }
      outcomes.push(
        `${crash.kind}${crash.delay === undefined ? '' : ` (${crash.delay} ms after sending)`}: ` +
          `${answers[0]?.duplicate ? 'had committed' : 'had not committed'}`,
      )
    }
    // Batches after the last crash were still to send: the kills really happened mid-delivery.
    expect(batches.size).toBeGreaterThan((plan.at(-1)?.from ?? 0) + 5)

    // ---- the client sent every operation, in order, once --------------------------------
    const order = [...batches.keys()]
    const replay: FlagState = new Map()
    for (const id of order) for (const op of batches.get(id) ?? []) applyOp(replay, op as WireOp)
    expect(sortByKey([...replay.values()])).toEqual(sortByKey([...final.values()]))
    const sentOps = order.reduce((n, id) => n + (batches.get(id)?.length ?? 0), 0)

    // ---- the server's state equals the model --------------------------------------------
    const res = await realFetch(`${base}/api/flags`)
    expect(res.status).toBe(200)
    const servedWithRevisions = (await res.json()) as Array<ModelFlag & { revision: number }>
    // Every flag carries the read-only revision of its last change; the model knows the fields only.
    for (const flag of servedWithRevisions) expect(Number.isInteger(flag.revision) && flag.revision > 0).toBe(true)
    const served = servedWithRevisions.map(({ revision: _revision, ...flag }) => flag as ModelFlag)
    expect(served.length).toBe(final.size)
    expect(sortByKey(served)).toEqual(sortByKey([...final.values()]))

    // ---- batch ids and the change log: every batch applied once and whole ---------------
    const store = await openDatabase(db.url)
    cleanups.push(() => store.close())
    const applied = (await store.knex(TABLES.batches).select('batch_id', 'applied')) as Array<{
      batch_id: string
      applied: number | string
    }>
    expect(new Map(applied.map((r) => [r.batch_id, Number(r.applied)]))).toEqual(
      new Map(order.map((id) => [id, batches.get(id)?.length])),
    )
    const log = (await store.knex(TABLES.changes).orderBy('revision').select('revision', 'key', 'data')) as Array<{
      revision: number | string
      key: string
      data: string | null
    }>
    const revision = await store.knex(TABLES.meta).where('name', 'revision').first('value')
    expect(log.map((r) => Number(r.revision))).toEqual(log.map((_, i) => i + 1))
    expect(Number(revision?.value)).toBe(log.length)

    const model: FlagState = new Map()
    let at = 0
    for (const [n, id] of order.entries()) {
      const expected = applyBatchToModel(model, (batches.get(id) ?? []) as WireOp[])
      const run: ExpectedChange[] = log
        .slice(at, at + expected.length)
        .map((r) => ({ key: r.key, flag: r.data === null ? null : (JSON.parse(r.data) as ModelFlag) }))
      at += expected.length
      // A partial batch would leave a shorter run or flags without their batch's last write;
      // a batch applied twice would leave extra runs and the rest out of step.
      if (JSON.stringify(sortByKey(run)) !== JSON.stringify(sortByKey(expected))) {
        expect({ batch: n, batchId: id, changes: sortByKey(run) }).toEqual({
          batch: n,
          batchId: id,
          changes: sortByKey(expected),
        })
      }
    }
    expect(at).toBe(log.length)

    console.info(
      `[${dialect}] ${OPERATIONS} operations (${counts.insert} inserts, ${counts.update} updates, ${counts.delete} deletes) ` +
        `→ ${sentOps} sent after compaction in ${order.length} batches, ${attempts.length} attempts, ` +
        `${log.length} change-log entries; crashes: ${outcomes.join('; ')}; ` +
        `writes done at ${enqueuedMs} ms, delivered by ${deliveredMs} ms`,
    )
  }, 120_000)
})
