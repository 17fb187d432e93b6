import type { Operation } from '@flagsync/protocol'
import type { SyncClient } from '@flagsync/sync-client'
import { type BatchAnswer, type Delivery, deliveryOf, type Outbox } from './flag-write.js'

/** How many answers a tap keeps: enough for a write to find its answer after the flush that delivered it. */
const KEPT = 64
/** How long a save online waits for its batch's answer before it reports the edit as queued. */
const ANSWER_WAIT_MS = 8_000

/**
 * The service's answers to one sync client's batches, read off the requests
 * it makes through `fetch` (given to `createSyncClient`). The sync client
 * keeps only whether a batch went through; the editor needs the answer for
 * its own operation: the change request number, the conflict, the 422.
 */
export interface AnswerTap {
  fetch: typeof fetch
  /** The client whose outbox names the operations of each batch (set once it is created). */
  attach(client: SyncClient): void
  /** What the answers so far decide about the operation queued as `outboxId`, or null. */
  find(outboxId: number, recordId: string): Delivery | null
  /** Calls `listener` for each answer from now on; returns unsubscribe. */
  listen(listener: () => void): () => void
}

export function answerTap(base: typeof fetch = (input, init) => fetch(input, init)): AnswerTap {
  let client: SyncClient | null = null
  const answers: BatchAnswer[] = []
  const listeners = new Set<() => void>()
  async function record(init: RequestInit | undefined, response: Response): Promise<void> {
    const sent = JSON.parse(String(init?.body)) as { batchId: string; operations: Operation[] }
    const body: unknown = await response
      .clone()
      .json()
      .catch(() => null)
    // Read before the sync client sees the answer: the batch's operations are still in its outbox under its id.
    const entries = client ? await client.outbox() : []
    const outboxIds = entries.filter((e) => e.batchId === sent.batchId).map((e) => e.id)
    answers.push({ batchId: sent.batchId, status: response.status, body, operations: sent.operations, outboxIds })
    if (answers.length > KEPT) answers.shift()
    for (const listener of listeners) listener()
  }
  return {
    async fetch(input, init) {
      const response = await base(input, init)
      // An answer that cannot be read is one the editor does not hear about: it reports the edit as queued.
      await record(init, response).catch(() => undefined)
      return response
    },
    attach(c) {
      client = c
    },
    find(outboxId, recordId) {
      for (const answer of answers) {
        if (!answer.outboxIds.includes(outboxId)) continue
        const delivery = deliveryOf(answer, recordId)
        if (delivery) return delivery
      }
      return null
    },
    listen(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
  }
}

/**
 * The dashboard's outbox over one sync client per environment. A delivered
 * write is flushed at once and resolves the service's answer for it; one
 * refused (403/422) is discarded from the outbox, with the operations
 * compacted into it, so it does not block the edits behind it: the editor
 * still holds the draft to fix and save again. Without an answer within
 * `waitMs` (offline after all, another tab delivering, a batch ahead of it
 * blocked) it stays queued and the pending panel shows it.
 */
export function deliveringOutbox(
  of: (envId: string) => { client: SyncClient; tap: AnswerTap },
  waitMs = ANSWER_WAIT_MS,
): Outbox {
  return {
    async write(envId, operation, deliver) {
      const { client, tap } = of(envId)
      const id = await client.enqueue(operation)
      if (!deliver) return { kind: 'queued', reason: null }
      const flushed = client.flush().then(
        () => undefined,
        () => undefined,
      )
      const delivery = await answerFor(tap, id, operation.recordId, flushed, waitMs)
      if (!delivery) return { kind: 'queued', reason: await queuedReason(client) }
      // A conflict is filed aside and a refusal recorded only once the sync client has the answer: wait for it.
      if (delivery.kind === 'conflict') await flushed
      if (delivery.kind === 'refused') await discardRefused(client, id, flushed)
      return delivery
    },
  }
}

/** The answer deciding operation `id`: as soon as one arrives, or what the flush or the wait ended with. */
function answerFor(
  tap: AnswerTap,
  id: number,
  recordId: string,
  flushed: Promise<void>,
  waitMs: number,
): Promise<Delivery | null> {
  return new Promise((resolve) => {
    const done = () => {
      stop()
      clearTimeout(timer)
      resolve(tap.find(id, recordId))
    }
    const stop = tap.listen(() => {
      if (tap.find(id, recordId)) done()
    })
    const timer = setTimeout(done, waitMs)
    // Every answer of this tab's flush is recorded before the flush ends.
    void flushed.then(done)
  })
}

/** Drops the refused operation once the sync client has recorded the refusal (the ids it names, else this one). */
async function discardRefused(client: SyncClient, id: number, flushed: Promise<void>): Promise<void> {
  await flushed
  try {
    const { lastError } = await client.status()
    const culprits = lastError?.outboxIds?.includes(id) ? lastError.outboxIds : [id]
    await client.discard(culprits)
  } catch {
    // Another tab is sending it again: the pending panel shows the refusal and offers to discard it.
  }
}

async function queuedReason(client: SyncClient): Promise<string> {
  const status = await client.status().catch(() => null)
  if (status?.lastError) return `the last attempt failed: ${status.lastError.message}`
  if (status?.state === 'offline') return 'the browser is offline'
  return 'the service has not answered yet'
}
