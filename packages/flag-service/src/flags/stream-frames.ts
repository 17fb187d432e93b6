import { formatSseEvent } from '@flagsync/server-kit'

// The flag service's SSE frames. Flags are serialized once (by the store, or once per expansion); events are built
// around that JSON.

/** `connected`: the environment of an SDK-key stream, null on a dashboard stream. */
export const connectedFrame = (environmentId: string | null) =>
  formatSseEvent({ event: 'connected', data: JSON.stringify({ environment_id: environmentId }) })

/** `ready`: the end of the bootstrap, with how many flags it held. */
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
