import { applyFlagPatch, type Flag } from '@flagsync/protocol'
import { type Json, type Reply, readReply } from '@flagsync/test-support/http'
import type { SseReader } from '@flagsync/test-support/sse-reader'
import { expect } from 'vitest'

export { batch, fullFlag, insert, remove, update } from '@flagsync/test-support/operations'

type EventSourceMessage = SseReader['events'][number]

/** POSTs a batch (objects as JSON, strings as they are) and returns status, headers and parsed body. */
export async function postBatch(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  return readReply(res)
}

export type StreamData = { type: 'UPSERT'; flag: Flag } | { type: 'DELETE'; key: string }
/**
 * An update event's data. An UPSERT's flag carries its read-only revision, which must be the event's id;
 * it is checked here and left out, so tests compare the flag's own fields.
 */
export const dataOf = (e: EventSourceMessage): StreamData => {
  const data = JSON.parse(e.data) as StreamData | { type: 'UPSERT'; flag: Flag & { revision?: unknown } }
  if (data.type !== 'UPSERT') return data
  const { revision, ...flag } = data.flag as Flag & { revision?: unknown }
  expect(revision, e.data).toBe(Number(e.id))
  return { type: 'UPSERT', flag: flag as Flag }
}

/** Flags as the API lists them, without their read-only revision (checked to be a positive integer). */
export function withoutRevision(flags: Json[]): Json[] {
  return flags.map(({ revision, ...flag }: Json) => {
    expect(Number.isInteger(revision) && revision > 0, JSON.stringify(flag)).toBe(true)
    return flag
  })
}

/**
 * Twenty update batches on one flag, each naming a different subset of fields
 * and a unique description that identifies it in the stream.
 */
export function racingPatches(count = 20): Array<Record<string, unknown>> {
  return Array.from({ length: count }, (_, i) => {
    const changes: Record<string, unknown> = { description: `batch-${i}` }
    if (i % 2 === 0) changes.rollout_percentage = i * 5
    if (i % 3 === 0) changes.is_enabled = i % 2 === 0
    if (i % 5 === 0) changes.rules = [{ attribute: 'n', operator: 'equals', values: [String(i)] }]
    if (i % 7 === 0) changes.rollout_percentage = null
    return changes
  })
}

/**
 * Checks that the stream's UPSERTs are the batches applied one at a time in
 * some serial order: each event is the previous flag with exactly one batch's
 * changes merged in, every batch appears once, and ids strictly increase.
 * Returns the final flag.
 */
export function expectSerialOrder(
  start: Flag,
  patches: Array<Record<string, unknown>>,
  events: EventSourceMessage[],
): Flag {
  expect(events).toHaveLength(patches.length)
  const ids = events.map((e) => Number(e.id))
  for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1] as number)
  const seen = new Set<number>()
  let current = start
  for (const event of events) {
    const data = dataOf(event)
    if (data.type !== 'UPSERT') throw new Error(`expected an UPSERT, got ${event.data}`)
    const index = Number(/^batch-(\d+)$/.exec(String(data.flag.description))?.[1])
    expect(Number.isInteger(index), `event ${event.data} names no batch`).toBe(true)
    expect(seen.has(index), `batch ${index} applied twice`).toBe(false)
    seen.add(index)
    const expected = applyFlagPatch(current, patches[index])
    if (!expected.ok) throw new Error(`patch ${index} does not apply: ${JSON.stringify(expected.issues)}`)
    expect(data.flag).toEqual(expected.flag)
    current = expected.flag
  }
  expect(seen.size).toBe(patches.length)
  return current
}
