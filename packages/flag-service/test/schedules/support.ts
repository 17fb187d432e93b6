import { expect } from 'vitest'
import { SCHEDULES_TABLE } from '../../src/schedules/index.js'
import type { Caller, Harness, Json } from '../harness.js'

/** The runner's poll in these suites: the injected clock moves in steps, the runner sees a step within this. */
export const POLL_MS = 20

/** Schedule routes of one environment, as one caller. */
export function schedulesOf(h: Harness, environmentId: string, as: Caller = h.admin) {
  const env = `/api/environments/${environmentId}`
  return {
    create: (key: string, body: Json) => h.call(`${env}/flags/${key}/schedules`, { method: 'POST', as, body }),
    ofFlag: (key: string) => h.call(`${env}/flags/${key}/schedules`, { as }),
    list: (query = '') => h.call(`${env}/schedules${query}`, { as }),
    cancel: (id: number) => h.call(`${env}/schedules/${id}`, { method: 'DELETE', as }),
    approve: (id: number) => h.call(`${env}/schedules/${id}/approve`, { method: 'POST', as }),
  }
}

/** An ISO timestamp `ms` after the harness clock. */
export const inMs = (h: Harness, ms: number) => new Date(h.clock.now + ms).toISOString()

/** Creates a schedule as `as` (default the admin) and fails the test unless it is accepted. */
export async function schedule(
  h: Harness,
  environmentId: string,
  key: string,
  patch: Json,
  aheadMs = 60_000,
  as?: Caller,
) {
  const res = await schedulesOf(h, environmentId, as).create(key, { patch, run_at: inMs(h, aheadMs) })
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body as Json
}

/** Waits (real time, bounded) until the schedule's status is no longer `pending`, and returns it. */
export async function settled(h: Harness, environmentId: string, id: number, timeoutMs = 3000): Promise<Json> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const row = (await schedulesOf(h, environmentId).list()).body.find((s: Json) => s.id === id)
    if (row?.status !== 'pending' || Date.now() > deadline) return row
    await new Promise((r) => setTimeout(r, POLL_MS))
  }
}

/** Every schedule row (to prove a refused request stored nothing). */
export const scheduleRows = (h: Harness) => h.server.runtime.knex(SCHEDULES_TABLE).select('*').orderBy('id')

/** The flag's audit entries written by a schedule. */
export async function scheduleEntries(h: Harness, environmentId: string, key: string): Promise<Json[]> {
  const res = await h.call(`/api/environments/${environmentId}/flags/${key}/history`, { as: h.admin })
  expect(res.status).toBe(200)
  return res.body.entries.filter((e: Json) => e.source?.type === 'schedule')
}
