import type { FlagType } from '@flagsync/protocol'
import { type FormEvent, useEffect, useState } from 'react'
import { ApiError, api, errorText } from './api.js'
import { DeleteFlag } from './delete-flag.js'
import { Dialog } from './dialog.js'
import { loadSegments } from './editable-flags.js'
import { buildFlag, changesOf, type Draft, draftOf, patchOf, recordOf } from './flag-draft.js'
import { explainCycle } from './flag-view.js'
import { History } from './history.js'
import type { Outbox } from './offline-edits.js'
import { PrerequisiteRows } from './prerequisite-rows.js'
import { Promote } from './promote.js'
import { RuleRows } from './rule-rows.js'
import type { Environment, Flag, Role } from './types.js'
import { VariantRows } from './variant-rows.js'
import { summarizeWeights } from './weights.js'

/**
 * Creates a flag (in one environment or every one, all or nothing) or edits it in one
 * environment: type and values, variants with their live shares, rules with
 * the nine operators or a segment, prerequisites, rollout. An environment
 * that requires approval turns the save into a change request (202).
 *
 * Offline it starts from the saved copy (`saved`, queued edits included) and
 * queues instead of saving: the fields that changed as one update with the
 * copy's revision as its base, or a new flag as an insert per environment.
 */
export function FlagEditor(props: {
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
}) {
  const creating = props.flagKey === null
  const env = props.environments.find((e) => e.id === props.envId)
  const [draft, setDraft] = useState<Draft | null>(creating ? draftOf(null) : null)
  // What the draft started from: an offline save queues only the fields that differ from it.
  const [start, setStart] = useState<Draft | null>(null)
  const [targets, setTargets] = useState<'all' | string>('all')
  const [segments, setSegments] = useState<string[]>([])
  const [error, setError] = useState<string | null>(null)
  const [notice, setNotice] = useState<string | null>(null)

  const { offline, saved } = props
  // Offline the editor opens from the saved copy once, not again each time the queue changes under it.
  const [openedOffline] = useState(offline)
  useEffect(() => {
    void loadSegments(props.projectId).then(setSegments)
    if (props.flagKey === null || openedOffline) return
    api<Flag>('GET', `/api/environments/${props.envId}/flags/${encodeURIComponent(props.flagKey)}`)
      .then((flag) => {
        setDraft(draftOf(flag))
        setStart(draftOf(flag))
      })
      .catch((e) => setError(errorText(e)))
  }, [props.projectId, props.envId, props.flagKey, openedOffline])
  useEffect(() => {
    if (!openedOffline || props.flagKey === null) return
    if (!saved) {
      setError(`No saved copy of ${props.flagKey} to edit offline: the page had not loaded it from the service.`)
      return
    }
    setDraft((d) => d ?? draftOf(saved))
    setStart((d) => d ?? draftOf(saved))
  }, [openedOffline, saved, props.flagKey])

  const title = creating ? 'New flag' : `${props.flagKey} in ${env?.name ?? 'environment'}`
  if (!draft) {
    return (
      <Dialog title={title} onClose={props.onClose} wide>
        {error ? (
          <p role="alert" className="error">
            {error}
          </p>
        ) : (
          <p>Loading…</p>
        )}
      </Dialog>
    )
  }
  const current: Draft = draft
  const set = (patch: Partial<Draft>) => setDraft({ ...current, ...patch })
  const { flag, problems } = buildFlag(draft)
  const weights = summarizeWeights(flag.variants)

  async function save(event: FormEvent) {
    event.preventDefault()
    setError(null)
    setNotice(null)
    if (problems.length || weights.problem) return
    // An editor opened offline started from the saved copy: it queues even once the service is back.
    if (offline || openedOffline) {
      await queue()
      return
    }
    try {
      if (creating) {
        // One request for every target environment: created in all of them, or (409/422) in none.
        const envs = targets === 'all' ? props.environments : props.environments.filter((e) => e.id === targets)
        const result = await api<{ created: Array<{ environment_id: string; flag: Flag }> }>(
          'POST',
          `/api/projects/${props.projectId}/flags`,
          { flag, environment_ids: envs.map((e) => e.id) },
        )
        for (const created of result.created) props.onSaved(created.environment_id, created.flag)
        props.onClose()
        return
      }
      const path = `/api/environments/${props.envId}/flags/${encodeURIComponent(flag.key)}`
      const result = await api<Flag | { id: number }>('PATCH', path, patchOf(flag))
      if ('key' in result) {
        props.onSaved(props.envId, result)
        props.onClose()
      } else {
        setNotice(`${env?.name} requires approval: change request #${result.id} is waiting for a reviewer.`)
      }
    } catch (e) {
      setError(e instanceof ApiError ? explainCycle(errorText(e)) : errorText(e))
    }
  }

  /** Offline: into the outbox of each environment, delivered by the sync client when the service is reachable. */
  async function queue() {
    const outbox = props.outbox
    if (!outbox) {
      setError('Saving needs a connection: the outbox that queues edits offline is not open.')
      return
    }
    try {
      if (creating) {
        const envs = targets === 'all' ? props.environments : props.environments.filter((e) => e.id === targets)
        const taken = envs.filter((e) => props.exists(e.id, flag.key))
        if (taken.length) {
          setError(`${flag.key} already exists in ${taken.map((e) => e.name).join(', ')}: edit it there instead.`)
          return
        }
        for (const target of envs) await outbox.insert(target.id, { ...recordOf(flag), key: flag.key })
        props.onClose()
        return
      }
      const changes = changesOf(buildFlag(start ?? current).flag, flag)
      if (Object.keys(changes).length === 0) {
        setNotice('Nothing changed.')
        return
      }
      await outbox.update(props.envId, flag.key, changes, props.savedRevision)
      props.onClose()
    } catch (e) {
      setError(errorText(e))
    }
  }

  const typeHint = draft.type === 'json' ? 'JSON' : draft.type === 'boolean' ? 'true or false' : draft.type
  return (
    <Dialog title={title} onClose={props.onClose} wide>
      <form onSubmit={save} className="editor">
        <fieldset disabled={props.readOnly}>
          {props.readOnly ? <p className="hint">Read-only: editing {props.readOnlyReason}.</p> : null}
          {offline && !props.readOnly ? (
            <p className="notice" id="editor-offline">
              Offline: {creating ? 'the new flag is' : 'your changes are'} queued and delivered when the service is
              reachable
              {env?.require_approval && !creating ? `, where ${env.name} turns them into a change request` : ''}.
            </p>
          ) : null}
          <div className="grid">
            <label>
              Key
              <input
                required
                pattern="[A-Za-z0-9_\-]+"
                maxLength={100}
                value={draft.key}
                readOnly={!creating}
                onChange={(e) => set({ key: e.target.value })}
              />
            </label>
            <label>
              Type
              <select value={draft.type} onChange={(e) => set({ type: e.target.value as FlagType })}>
                <option value="boolean">boolean</option>
                <option value="string">string</option>
                <option value="integer">integer</option>
                <option value="json">json</option>
              </select>
            </label>
            {creating ? (
              <label>
                Create in
                <select value={targets} onChange={(e) => setTargets(e.target.value)}>
                  <option value="all">every environment</option>
                  {props.environments.map((e) => (
                    <option key={e.id} value={e.id}>
                      {e.name} only
                    </option>
                  ))}
                </select>
              </label>
            ) : null}
            <label className="inline">
              <input type="checkbox" checked={draft.enabled} onChange={(e) => set({ enabled: e.target.checked })} />
              On
            </label>
          </div>
          <label>
            Description <span className="hint">(#words are tags)</span>
            <input value={draft.description} maxLength={1000} onChange={(e) => set({ description: e.target.value })} />
          </label>
          <div className="grid">
            <label>
              Default value ({typeHint})
              <input value={draft.defaultValue} onChange={(e) => set({ defaultValue: e.target.value })} />
            </label>
            <label>
              Disabled value ({typeHint})
              <input value={draft.disabledValue} onChange={(e) => set({ disabledValue: e.target.value })} />
            </label>
            <label>
              Rollout %
              <input
                inputMode="numeric"
                placeholder="everyone"
                value={draft.rollout}
                onChange={(e) => set({ rollout: e.target.value })}
              />
            </label>
          </div>

          <VariantRows variants={draft.variants} weights={weights} onChange={(variants) => set({ variants })} />
          <RuleRows rules={draft.rules} segments={segments} onChange={(rules) => set({ rules })} />
          <PrerequisiteRows
            prerequisites={draft.prerequisites}
            knownKeys={props.knownKeys}
            onChange={(prerequisites) => set({ prerequisites })}
          />
        </fieldset>
        {!creating && env && offline ? (
          <p className="hint" id="editor-needs-connection">
            Promote and history need a connection: the service compares and keeps them.
          </p>
        ) : null}
        {!creating && env && !offline ? (
          <Promote
            flagKey={flag.key}
            from={env}
            environments={props.environments}
            disabled={props.readOnly}
            onPromoted={props.onSaved}
          />
        ) : null}
        {!creating && env && !offline ? (
          <details>
            <summary>History in {env.name}</summary>
            <History
              url={`/api/environments/${env.id}/flags/${encodeURIComponent(flag.key)}/history?limit=50`}
              title={`History of ${flag.key} in ${env.name}`}
            />
          </details>
        ) : null}
        {problems.length ? (
          <ul className="error" aria-live="polite">
            {problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        ) : null}
        {error ? (
          <p role="alert" className="error" id="editor-error">
            {error}
          </p>
        ) : null}
        {notice ? (
          <p role="status" className="notice">
            {notice}
          </p>
        ) : null}
        <div className="actions">
          {!creating && env ? (
            <DeleteFlag
              flagKey={flag.key}
              envId={env.id}
              environments={props.environments}
              role={props.role}
              offline={offline || openedOffline}
              outbox={props.outbox}
              presentIn={(id) => props.exists(id, flag.key)}
              revisionOf={(id) => props.revisionOf(id, flag.key)}
              onDeleted={(ids) => {
                props.onDeleted(ids, flag.key)
                props.onClose()
              }}
            />
          ) : null}
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button
            type="submit"
            className="primary"
            disabled={props.readOnly || problems.length > 0 || weights.problem !== null}
          >
            {offline
              ? creating
                ? 'Queue new flag'
                : 'Queue changes'
              : creating
                ? 'Create flag'
                : env?.require_approval
                  ? 'Request change'
                  : 'Save'}
          </button>
        </div>
      </form>
    </Dialog>
  )
}
