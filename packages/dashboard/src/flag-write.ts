import { api } from './api.js'
import { type BuiltFlag, recordOf } from './flag-draft.js'
import type { Outbox } from './offline-edits.js'
import type { Environment, Flag } from './types.js'

/**
 * What a flag write came to: `saved` with the flags as the service stored
 * them, `requested` when an environment that requires approval filed a
 * change request instead, `queued` when it waits in the outbox.
 */
export type FlagWriteOutcome =
  | { kind: 'saved'; flags: Array<{ envId: string; flag: Flag }> }
  | { kind: 'requested'; id: number }
  | { kind: 'queued' }

/** Where a write goes: `queued` (offline, or an editor that opened offline) into `outbox`, else to the service. */
export interface FlagWriteTarget {
  queued: boolean
  outbox: Outbox | null
}

const flagPath = (envId: string, key: string) => `/api/environments/${envId}/flags/${encodeURIComponent(key)}`

function outboxOf(target: FlagWriteTarget): Outbox {
  if (!target.outbox) throw new Error('Saving needs a connection: the outbox that queues edits offline is not open.')
  return target.outbox
}

/**
 * Every flag write of the dashboard, in one place. Queued, each is an
 * operation in the environment's outbox, delivered by the sync client to
 * `POST /api/environments/:id/sync` (conflicts come back to the pending
 * panel). Online, each is the REST call that answers at once with what the
 * service decided: the stored flag, a change request's number, a 409 naming
 * what changed since `baseRevision`, or a 422 naming the invalid field.
 */
export function flagWriter(target: FlagWriteTarget) {
  return {
    /** A merge patch of one flag; queued with `baseRevision` as the base the sync route checks. */
    async update(
      envId: string,
      key: string,
      changes: Record<string, unknown>,
      baseRevision: number | undefined,
    ): Promise<FlagWriteOutcome> {
      if (target.queued) {
        await outboxOf(target).update(envId, key, changes, baseRevision)
        return { kind: 'queued' }
      }
      const result = await api<Flag | { id: number }>('PATCH', flagPath(envId, key), changes)
      return 'key' in result
        ? { kind: 'saved', flags: [{ envId, flag: result }] }
        : { kind: 'requested', id: result.id }
    },

    /** A new flag in each of `envs`: online in one request (created in all or, with 409/422, in none). */
    async create(projectId: string, envs: readonly Environment[], flag: BuiltFlag): Promise<FlagWriteOutcome> {
      if (target.queued) {
        const outbox = outboxOf(target)
        for (const env of envs) await outbox.insert(env.id, { ...recordOf(flag), key: flag.key })
        return { kind: 'queued' }
      }
      const result = await api<{ created: Array<{ environment_id: string; flag: Flag }> }>(
        'POST',
        `/api/projects/${projectId}/flags`,
        { flag, environment_ids: envs.map((e) => e.id) },
      )
      return { kind: 'saved', flags: result.created.map((c) => ({ envId: c.environment_id, flag: c.flag })) }
    },

    /** Deletes the flag in one environment; online with `If-Match` of `revision`, queued with it as the base. */
    async remove(envId: string, key: string, revision: number | undefined): Promise<void> {
      if (target.queued) return outboxOf(target).delete(envId, key, revision)
      await api<void>(
        'DELETE',
        flagPath(envId, key),
        undefined,
        revision === undefined ? {} : { 'If-Match': `"${revision}"` },
      )
    },
  }
}
