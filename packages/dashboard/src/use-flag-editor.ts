import { useQuery } from '@tanstack/react-query'
import { type FormEvent, useEffect, useState } from 'react'
import { ApiError, api, errorText } from './api.js'
import {
  type BuiltFlag,
  buildFlag,
  changesOf,
  chosenEnvironments,
  type Draft,
  draftOf,
  patchOf,
  recordOf,
} from './flag-draft.js'
import { explainCycle } from './flag-view.js'
import type { Outbox } from './offline-edits.js'
import { queryKeys } from './query-keys.js'
import type { Environment, Flag, Role } from './types.js'
import { useSegments } from './use-projects.js'

export interface FlagEditorProps {
  projectId: string
  environments: Environment[]
  envId: string
  flagKey: string | null
  knownKeys: string[]
  readOnly: boolean
  readOnlyReason: string
  onClose: () => void
  onSaved: (envId: string, flag: Flag) => void
  offline: boolean
  /** Where offline saves go; null when no outbox is open. */
  outbox: Outbox | null
  /** Offline: the flag as last saved from the service, with the queued edits applied. */
  saved: Flag | undefined
  /** The service's revision of `saved` before the queued edits: the base the sync route checks against. */
  savedRevision: number | undefined
  exists: (envId: string, key: string) => boolean
  /** The caller's project role: who may delete (the service's role table). */
  role: Role
  /** The revision a delete is checked against in an environment: the one this page last saw. */
  revisionOf: (envId: string, key: string) => number | undefined
  onDeleted: (envIds: string[], key: string) => void
}

/**
 * The draft an editor works on and what it started from: a new flag's empty
 * draft, the service's copy online, or offline the saved copy (`saved`, queued
 * edits included), read once, not again each time the queue changes under it.
 */
export function useFlagDraft(props: FlagEditorProps) {
  const [draft, setDraft] = useState<Draft | null>(props.flagKey === null ? draftOf(null) : null)
  // What the draft started from: an offline save queues only the fields that differ from it.
  const [start, setStart] = useState<Draft | null>(null)
  const [error, setError] = useState<string | null>(null)
  const { saved } = props
  const [openedOffline] = useState(props.offline)
  const segments = useSegments(props.projectId)
  const flagKey = props.flagKey ?? ''
  const served = useQuery({
    queryKey: queryKeys.flag(props.envId, flagKey),
    queryFn: () => api<Flag>('GET', `/api/environments/${props.envId}/flags/${encodeURIComponent(flagKey)}`),
    enabled: props.flagKey !== null && !openedOffline,
    staleTime: 0,
    gcTime: 0,
  })
  const initial = openedOffline ? saved : served.data
  useEffect(() => {
    if (props.flagKey === null) return
    if (openedOffline && !saved) {
      setError(`No saved copy of ${props.flagKey} to edit offline: the page had not loaded it from the service.`)
      return
    }
    if (!initial) return
    // Read once: the queue or the service changing under an open editor must not reset what was typed.
    setDraft((d) => d ?? draftOf(initial))
    setStart((d) => d ?? draftOf(initial))
  }, [openedOffline, saved, initial, props.flagKey])
  const loadError = served.error ? errorText(served.error) : null
  return {
    draft,
    setDraft,
    start,
    segments: segments.data ?? NO_SEGMENTS,
    error: error ?? loadError,
    setError,
    openedOffline,
  }
}

const NO_SEGMENTS: string[] = []

/** What a save needs besides the editor's props: the flag built from the draft and where it goes. */
export interface SaveRequest {
  flag: BuiltFlag
  /** The draft as it started: an offline update queues only what differs from it. */
  start: Draft
  targets: 'all' | string
}

type Outcome = { error: string } | { notice: string } | 'closed'

/**
 * Online: a new flag in one request for every target environment (created in
 * all of them, or with 409/422 in none); an edit as a PATCH, which an
 * environment that requires approval answers with a change request (202).
 */
async function saveToService(props: FlagEditorProps, request: SaveRequest): Promise<Outcome> {
  const { flag } = request
  try {
    if (props.flagKey === null) {
      const envs = chosenEnvironments(props.environments, request.targets)
      const result = await api<{ created: Array<{ environment_id: string; flag: Flag }> }>(
        'POST',
        `/api/projects/${props.projectId}/flags`,
        { flag, environment_ids: envs.map((e) => e.id) },
      )
      for (const created of result.created) props.onSaved(created.environment_id, created.flag)
      return 'closed'
    }
    const path = `/api/environments/${props.envId}/flags/${encodeURIComponent(flag.key)}`
    const result = await api<Flag | { id: number }>('PATCH', path, patchOf(flag))
    if (!('key' in result)) {
      const env = props.environments.find((e) => e.id === props.envId)
      return { notice: `${env?.name} requires approval: change request #${result.id} is waiting for a reviewer.` }
    }
    props.onSaved(props.envId, result)
    return 'closed'
  } catch (e) {
    return { error: e instanceof ApiError ? explainCycle(errorText(e)) : errorText(e) }
  }
}

/**
 * Offline: into the outbox of each environment, delivered by the sync client
 * when the service is reachable. A new flag is an insert per environment; an
 * edit is the fields that changed, as one update with the copy's revision as its base.
 */
async function queueOffline(props: FlagEditorProps, request: SaveRequest): Promise<Outcome> {
  const { outbox } = props
  const { flag } = request
  if (!outbox) return { error: 'Saving needs a connection: the outbox that queues edits offline is not open.' }
  try {
    if (props.flagKey === null) {
      const envs = chosenEnvironments(props.environments, request.targets)
      const taken = envs.filter((e) => props.exists(e.id, flag.key))
      if (taken.length)
        return { error: `${flag.key} already exists in ${taken.map((e) => e.name).join(', ')}: edit it there instead.` }
      for (const target of envs) await outbox.insert(target.id, { ...recordOf(flag), key: flag.key })
      return 'closed'
    }
    const changes = changesOf(buildFlag(request.start).flag, flag)
    if (Object.keys(changes).length === 0) return { notice: 'Nothing changed.' }
    await outbox.update(props.envId, flag.key, changes, props.savedRevision)
    return 'closed'
  } catch (e) {
    return { error: errorText(e) }
  }
}

/**
 * The editor's submit: nothing while the draft has problems; queued when
 * offline or when the editor opened offline (it started from the saved copy,
 * so it queues even once the service is back); saved to the service otherwise.
 */
export function useFlagSave(
  props: FlagEditorProps,
  state: { openedOffline: boolean; blocked: boolean; setError: (error: string | null) => void },
) {
  const [notice, setNotice] = useState<string | null>(null)
  async function save(event: FormEvent, request: SaveRequest) {
    event.preventDefault()
    state.setError(null)
    setNotice(null)
    if (state.blocked) return
    const queued = props.offline || state.openedOffline
    const outcome = await (queued ? queueOffline(props, request) : saveToService(props, request))
    if (outcome === 'closed') props.onClose()
    else if ('error' in outcome) state.setError(outcome.error)
    else setNotice(outcome.notice)
  }
  return { notice, save }
}
