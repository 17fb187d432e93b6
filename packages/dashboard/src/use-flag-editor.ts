import { useQuery } from '@tanstack/react-query'
import { type FormEvent, useEffect, useState } from 'react'
import { ApiError, api, errorText } from './api.js'
import { type BuiltFlag, buildFlag, changesOf, chosenEnvironments, type Draft, draftOf, patchOf } from './flag-draft.js'
import { explainCycle } from './flag-view.js'
import { type FlagWriteOutcome, flagWriter } from './flag-write.js'
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
 * A save through the flag writer. Queued: a new flag is an insert per
 * environment (refused where the key is taken), an edit the fields that
 * changed as one update with the copy's revision as its base. Online: a new
 * flag in one request for every target (all of them, or with 409/422 none),
 * an edit as a PATCH, which an environment that requires approval answers
 * with a change request (202).
 */
async function saveFlag(props: FlagEditorProps, request: SaveRequest, queued: boolean): Promise<Outcome> {
  const { flag } = request
  const writer = flagWriter({ queued, outbox: props.outbox })
  try {
    if (props.flagKey === null) {
      const envs = chosenEnvironments(props.environments, request.targets)
      const taken = queued ? envs.filter((e) => props.exists(e.id, flag.key)) : []
      if (taken.length)
        return { error: `${flag.key} already exists in ${taken.map((e) => e.name).join(', ')}: edit it there instead.` }
      shown(props, await writer.create(props.projectId, envs, flag))
      return 'closed'
    }
    const changes = queued ? changesOf(buildFlag(request.start).flag, flag) : patchOf(flag)
    if (Object.keys(changes).length === 0) return { notice: 'Nothing changed.' }
    const outcome = await writer.update(props.envId, flag.key, changes, props.savedRevision)
    if (outcome.kind === 'requested') {
      const env = props.environments.find((e) => e.id === props.envId)
      return { notice: `${env?.name} requires approval: change request #${outcome.id} is waiting for a reviewer.` }
    }
    shown(props, outcome)
    return 'closed'
  } catch (e) {
    return { error: e instanceof ApiError ? explainCycle(errorText(e)) : errorText(e) }
  }
}

/** The flags the service stored, shown at once (the stream's copy follows). */
function shown(props: FlagEditorProps, outcome: FlagWriteOutcome) {
  if (outcome.kind === 'saved') for (const { envId, flag } of outcome.flags) props.onSaved(envId, flag)
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
    const outcome = await saveFlag(props, request, props.offline || state.openedOffline)
    if (outcome === 'closed') props.onClose()
    else if ('error' in outcome) state.setError(outcome.error)
    else setNotice(outcome.notice)
  }
  return { notice, save }
}
