import { useQuery } from '@tanstack/react-query'
import { type FormEvent, useEffect, useState } from 'react'
import { ApiError, api, errorText } from './api.js'
import { type BuiltFlag, buildFlag, changesOf, chosenEnvironments, type Draft, draftOf } from './flag-draft.js'
import { explainCycle } from './flag-view.js'
import { type FlagWriteOutcome, flagWriter, type Outbox } from './flag-write.js'
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
  /** Where every save goes (delivered at once online); null offline while no outbox is open. */
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
  // The revision the draft started from: the base a save is checked against (a conflict when a field it sets changed).
  const [startRevision, setStartRevision] = useState<{ revision: number | undefined } | null>(null)
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
    setStartRevision((r) => r ?? { revision: initial.revision })
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
    baseRevision: openedOffline ? props.savedRevision : startRevision?.revision,
  }
}

const NO_SEGMENTS: string[] = []

/** What a save needs besides the editor's props: the flag built from the draft and where it goes. */
export interface SaveRequest {
  flag: BuiltFlag
  /** The draft as it started: an update sends only the fields that differ from it. */
  start: Draft
  targets: 'all' | string
  /** A new flag's tags and owner, sent with its creation (online only). */
  meta?: { tags: string[]; owner: number | null }
}

type Outcome = { error: string } | { notice: string } | 'closed'

/**
 * A save through the flag writer: an edit is the fields that changed since
 * the draft started, as one update with `baseRevision` (the revision it
 * started from) as its base, delivered at once online (an environment that
 * requires approval answers with a change request) and queued offline. A new
 * flag is one request for every target online (all of them, or with 409/422
 * none), an insert per environment queued (refused here where the key is taken).
 */
async function saveFlag(
  props: FlagEditorProps,
  request: SaveRequest,
  how: { queued: boolean; baseRevision: number | undefined },
): Promise<Outcome> {
  const { flag } = request
  const { queued } = how
  const writer = flagWriter({ queued, outbox: props.outbox })
  try {
    if (props.flagKey === null) {
      const envs = chosenEnvironments(props.environments, request.targets)
      const taken = queued ? envs.filter((e) => props.exists(e.id, flag.key)) : []
      if (taken.length)
        return { error: `${flag.key} already exists in ${taken.map((e) => e.name).join(', ')}: edit it there instead.` }
      shown(props, await writer.create(props.projectId, envs, flag, request.meta))
      return 'closed'
    }
    const changes = changesOf(buildFlag(request.start).flag, flag)
    if (Object.keys(changes).length === 0) return { notice: 'Nothing changed.' }
    const outcome = await writer.update(props.envId, flag.key, changes, how.baseRevision)
    const env = props.environments.find((e) => e.id === props.envId)
    if (outcome.kind === 'requested')
      return { notice: `${env?.name} requires approval: change request #${outcome.id} is waiting for a reviewer.` }
    if (outcome.kind === 'queued' && outcome.reason)
      return { notice: `Queued: ${outcome.reason}. It is sent when the service answers (see the queued edits).` }
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
 * so it queues even once the service is back); delivered at once otherwise.
 */
export function useFlagSave(
  props: FlagEditorProps,
  state: {
    openedOffline: boolean
    blocked: boolean
    baseRevision: number | undefined
    setError: (error: string | null) => void
  },
) {
  const [notice, setNotice] = useState<string | null>(null)
  async function save(event: FormEvent, request: SaveRequest) {
    event.preventDefault()
    state.setError(null)
    setNotice(null)
    if (state.blocked) return
    const queued = props.offline || state.openedOffline
    const outcome = await saveFlag(props, request, { queued, baseRevision: state.baseRevision })
    if (outcome === 'closed') props.onClose()
    else if ('error' in outcome) state.setError(outcome.error)
    else setNotice(outcome.notice)
  }
  return { notice, save }
}
