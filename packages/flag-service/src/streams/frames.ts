import { DASHBOARD_STREAM_EVENTS } from '@flagsync/protocol'
import { formatSseEvent, resumedFrame } from '@flagsync/server-kit'

// The flag service's SSE frames. Flags are serialized once (by the store, or once per expansion); events are built
// around that JSON.

/**
 * `connected`: the environment of an SDK-key stream, null on a dashboard stream. Its empty `id:` clears the
 * client's last event id, so a client cut off before the first flag reconnects for a full bootstrap instead of
 * resuming its previous connection's position.
 */
export const connectedFrame = (environmentId: string | null) =>
  formatSseEvent({ event: 'connected', data: JSON.stringify({ environment_id: environmentId }), id: '' })

/** `resumed` (instead of `connected`): the client's id repeated, the missed updates follow, then `ready`. */
export const resumedServiceFrame = (from: number, environmentId: string | null) =>
  resumedFrame(from, JSON.stringify({ environment_id: environmentId }))

/** `ready`: the end of the bootstrap (or of a resume), with how many flags (updates) it held. */
export const readyFrame = (count: number) => formatSseEvent({ event: 'ready', data: JSON.stringify(String(count)) })

export const upsertFrame = (environmentId: string, json: string, revision?: number) =>
  formatSseEvent({
    event: 'update',
    data: `{"type":"UPSERT","env_id":${JSON.stringify(environmentId)},"flag":${json}}`,
    id: revision,
  })

export const deleteFrame = (environmentId: string, key: string, revision: number) =>
  formatSseEvent({
    event: 'update',
    data: `{"type":"DELETE","env_id":${JSON.stringify(environmentId)},"key":${JSON.stringify(key)}}`,
    id: revision,
  })

/** `environments`: a project's environments in their new order, for dashboards. */
export const environmentsFrame = (projectId: string, environmentIds: unknown[], revision: number) =>
  formatSseEvent({
    event: 'environments',
    data: JSON.stringify({ project_id: projectId, environment_ids: environmentIds }),
    id: revision,
  })

/**
 * `people`: a user's role, name or password changed (`action` as in the people audit), for dashboards. No `id:`:
 * it is not a flag revision a stream resumes from; a reconnecting dashboard re-reads who is signed in anyway.
 */
export const peopleFrame = (userId: number, action: string) =>
  formatSseEvent({ event: DASHBOARD_STREAM_EVENTS.people, data: JSON.stringify({ user_id: userId, action }) })
