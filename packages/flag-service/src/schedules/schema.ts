import { HttpError } from '@flagsync/server-kit'
import { z } from 'zod'
import { flagPatchSchema } from '../flags/model.js'

export const SCHEDULE_STATUSES = ['pending', 'applied', 'failed', 'cancelled'] as const
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number]

/** The furthest ahead a schedule may run: a year. */
const MAX_SCHEDULE_AHEAD_MS = 366 * 24 * 60 * 60 * 1000

/** `POST …/flags/:key/schedules`: the patch is the PATCH route's schema; `run_at` an ISO 8601 timestamp. */
export const createScheduleSchema = z.strictObject({
  patch: flagPatchSchema,
  run_at: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp such as 2026-12-01T09:00:00Z' }),
})

export const scheduleQuerySchema = z.strictObject({ status: z.enum(SCHEDULE_STATUSES).optional() })

/** `run_at` as epoch ms: a 422 naming it unless it is after `now` and at most a year ahead. */
export function runAtOf(raw: string, now: number): number {
  const runAt = Date.parse(raw)
  const message =
    runAt <= now ? 'must be in the future' : runAt - now > MAX_SCHEDULE_AHEAD_MS ? 'must be at most a year ahead' : null
  if (message === null) return runAt
  throw new HttpError('validation_failed', `invalid schedule: run_at: ${message}`, {
    issues: [{ path: 'run_at', message }],
  })
}
