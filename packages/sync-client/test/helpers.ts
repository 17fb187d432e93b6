import type { Operation } from '@flagsync/protocol'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { HttpResponse, http } from 'msw'
import { type SetupServer, setupServer } from 'msw/node'
import { afterAll, afterEach, beforeAll, type vi } from 'vitest'
import { createSyncClient, type SyncClient, type SyncClientOptions } from '../src/index.js'
import { loadLazyOps } from '../src/lazy.js'

export const WEBHOOK = 'https://receiver.test/sync'

export interface Received {
  batchId: string
  operations: Operation[]
  headers: Headers
  /** When it arrived, by the receiver's `now` (default Date.now). */
  at: number
}

type Reply = (received: Received) => Response | Promise<Response>

/**
 * A webhook receiver with the reference semantics: records applied batch ids
 * and answers a repeat with `duplicate: true`; insert creates or replaces,
 * update merges shallowly, delete removes. Queue replies with `reply(...)` to
 * simulate failures.
 */
/** The receiver's state after the raw queue (an update of a missing record creates it, as ModelReceiver does). */
export function modelState(ops: readonly Operation[]): Map<string, Record<string, unknown>> {
  const state = new Map<string, Record<string, unknown>>()
  for (const op of ops) {
    const key = `${op.collection}/${op.recordId}`
    if (op.action === 'insert') state.set(key, op.record)
    else if (op.action === 'delete') state.delete(key)
    else state.set(key, { ...(state.get(key) ?? {}), ...op.changes })
  }
  return state
}

export class ModelReceiver {
  readonly requests: Received[] = []
  readonly appliedBatches: string[] = []
  readonly records = new Map<string, Record<string, unknown>>()
  readonly appliedOperations: Operation[] = []
  private readonly replies: Reply[] = []

  /** With `strictUpdates`, an update of a missing record is a 422 (like the reference receiver); else it creates it. */
  constructor(private readonly options: { strictUpdates?: boolean; now?: () => number } = {}) {}

  /** Replies used, in order, for the next requests (then the model answers again). */
  reply(...replies: Reply[]): void {
    this.replies.push(...replies)
  }

  readonly handler = http.post(WEBHOOK, async ({ request }) => {
    const body = (await request.json()) as { batchId: string; operations: Operation[] }
    const received: Received = {
      batchId: body.batchId,
      operations: body.operations,
      headers: request.headers,
      at: (this.options.now ?? Date.now)(),
    }
    this.requests.push(received)
    const override = this.replies.shift()
    if (override) return override(received)
    return this.apply(received)
  })

  apply({ batchId, operations }: Received): Response {
    if (this.appliedBatches.includes(batchId)) return HttpResponse.json({ batchId, applied: 0, duplicate: true })
    const next = new Map(this.records)
    for (const [index, op] of operations.entries()) {
      const key = `${op.collection}/${op.recordId}`
      if (op.action === 'insert') next.set(key, op.record)
      else if (op.action === 'delete') next.delete(key)
      else {
        const existing = next.get(key)
        if (!existing && this.options.strictUpdates) {
          return HttpResponse.json(
            { error: `operation ${index}: ${key} does not exist`, code: 'validation_failed', operationIndex: index },
            { status: 422 },
          )
        }
        next.set(key, { ...(existing ?? {}), ...op.changes })
      }
    }
    this.records.clear()
    for (const [k, v] of next) this.records.set(k, v)
    this.appliedBatches.push(batchId)
    this.appliedOperations.push(...operations)
    return HttpResponse.json({ batchId, applied: operations.length })
  }

  /** Every operation in every request, in order (duplicates included). */
  sentOperations(): Operation[] {
    return this.requests.flatMap((r) => r.operations)
  }
}

export const status =
  (
    code: number,
    body: Record<string, unknown> = { error: `status ${code}` },
    headers: Record<string, string> = {},
  ): Reply =>
  () =>
    HttpResponse.json(body, { status: code, headers })
export const networkError: Reply = () => HttpResponse.error()

/** One msw server per test file; each test installs its receiver's handler. */
export function useMockServer(): SetupServer {
  const server = setupServer()
  beforeAll(() => server.listen({ onUnhandledRequest: 'error' }))
  // The harness's clients run without Web Locks, so their first drain takes the delivery lease, which is in the lazy
  // chunk (lazy-ops.ts): loaded here, as on a page that has it cached, so that the first drain's timing on a fake clock
  // does not depend on how long loading it takes in real time. Its first load is tested in lazy-load.test.ts.
  beforeAll(() => loadLazyOps())
  afterEach(() => server.resetHandlers())
  afterAll(() => server.close())
  return server
}

export interface Harness {
  indexedDB: IDBFactory
  clients: SyncClient[]
  /** A client on this harness's database (a fresh fake IndexedDB per harness). */
  client(options?: Partial<SyncClientOptions>): SyncClient
  closeAll(): Promise<void>
}

export function harness(defaults: Partial<SyncClientOptions> = {}): Harness {
  const indexedDB = new IDBFactory()
  const clients: SyncClient[] = []
  return {
    indexedDB,
    clients,
    client(options = {}) {
      const client = createSyncClient({
        webhookUrl: WEBHOOK,
        indexedDB,
        IDBKeyRange,
        locks: null,
        broadcastChannel: null,
        ...defaults,
        ...options,
      })
      clients.push(client)
      return client
    },
    async closeAll() {
      await Promise.all(clients.map((c) => c.close()))
    },
  }
}

/** Fakes only the timers the client uses: fake-indexeddb keeps running on setImmediate. */
export const FAKE_TIMERS: Parameters<typeof vi.useFakeTimers>[0] = {
  toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
}

/** Lets IndexedDB (setImmediate, never faked here) and promises run, without moving fake time. */
export async function settle(rounds = 30): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** Waits, in real macrotasks, until `condition` holds (fake time does not move); gives up after `timeoutMs` of real time. */
export async function until(condition: () => boolean, what = 'condition', timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/**
 * An injected clock: time moves only in `advance`, which fires due timers in
 * order at their exact time and lets IndexedDB and the mock server work
 * (real macrotasks) after each, before moving on.
 */
export class ManualClock {
  private current: number
  private seq = 0
  private readonly timers = new Map<number, { at: number; callback: () => void; order: number }>()

  constructor(start = 0) {
    this.current = start
  }

  now = (): number => this.current
  setTimeout = (callback: () => void, ms: number): unknown => {
    const id = ++this.seq
    this.timers.set(id, { at: this.current + Math.max(0, ms), callback, order: id })
    return id
  }
  clearTimeout = (handle: unknown): void => {
    this.timers.delete(handle as number)
  }

  /** Pending timers, soonest first (for assertions). */
  pending(): number[] {
    return [...this.timers.values()].map((t) => t.at).sort((a, b) => a - b)
  }

  async advance(ms: number, settleRounds = 60): Promise<void> {
    const target = this.current + ms
    await settle(settleRounds)
    for (;;) {
      let next: [number, { at: number; callback: () => void; order: number }] | undefined
      for (const entry of this.timers) {
        if (entry[1].at > target) continue
        if (!next || entry[1].at < next[1].at || (entry[1].at === next[1].at && entry[1].order < next[1].order)) {
          next = entry
        }
      }
      if (!next) break
      this.timers.delete(next[0])
      this.current = Math.max(this.current, next[1].at)
      next[1].callback()
      await settle(settleRounds)
    }
    this.current = target
  }
}

/** An in-memory Web Locks implementation (exclusive locks, `ifAvailable`, `signal`), shared by "tabs". */
export class FakeLocks {
  private readonly held = new Set<string>()
  private readonly queues = new Map<string, (() => void)[]>()
  /** Most callbacks ever running at once for one name (must stay 1). */
  maxConcurrent = 0
  private running = 0

  async request(
    name: string,
    options: { ifAvailable?: boolean; signal?: AbortSignal },
    callback: (lock: unknown) => Promise<unknown>,
  ): Promise<unknown> {
    if (this.held.has(name)) {
      if (options.ifAvailable) return callback(null)
      await new Promise<void>((resolve, reject) => {
        const queue = this.queues.get(name) ?? []
        this.queues.set(name, queue)
        const grant = (): void => resolve()
        queue.push(grant)
        options.signal?.addEventListener('abort', () => {
          const i = queue.indexOf(grant)
          if (i >= 0) queue.splice(i, 1)
          reject(new DOMException('The request was aborted', 'AbortError'))
        })
      })
    } else {
      this.held.add(name)
    }
    this.running++
    this.maxConcurrent = Math.max(this.maxConcurrent, this.running)
    try {
      return await callback({ name })
    } finally {
      this.running--
      const next = this.queues.get(name)?.shift()
      if (next) next()
      else this.held.delete(name)
    }
  }
}

/** An in-memory BroadcastChannel bus: every channel of a name hears the others, never itself. */
export function broadcastBus() {
  const channels = new Set<{ name: string; onmessage: ((e: { data: unknown }) => void) | null }>()
  return (name: string) => {
    const channel = {
      name,
      onmessage: null as ((e: { data: unknown }) => void) | null,
      postMessage(data: unknown) {
        const copy = structuredClone(data)
        for (const other of channels) {
          if (other !== channel && other.name === name) queueMicrotask(() => other.onmessage?.({ data: copy }))
        }
      },
      close() {
        channels.delete(channel)
      },
    }
    channels.add(channel)
    return channel
  }
}
