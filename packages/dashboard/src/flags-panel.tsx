import { applyPending, type ClientFlag } from '@flagsync/flag-client'
import type { FlagType, Operation } from '@flagsync/protocol'
import { lazy, Suspense, useCallback, useMemo, useState, useSyncExternalStore } from 'react'
import { api, errorText } from './api.js'
import { useEditableFlags } from './editable-flags.js'
import { FlagEditor } from './flag-editor.js'
import { type FlagFilter, flagRows, type StateFilter, servedAtGlance } from './flag-view.js'
import type { LiveFlags } from './live-flags.js'
import type { Outbox } from './offline-edits.js'
import type { Environment, Flag, Project, Role } from './types.js'

const NO_FILTER: FlagFilter = { search: '', type: 'all', state: 'all', tag: '' }

// The outboxes (sync client and Dexie) load after the first render: not part of the first load.
const OfflineEdits = lazy(() => import('./offline-edits.js'))

/** One table per project: a row per flag key, a column per environment, live from the dashboard stream. */
export function FlagsPanel(props: {
  project: Project
  environments: Environment[]
  role: Role
  offline: boolean
  actor: string
  /** The project's dashboard stream, opened by the project page so that it outlives a switch of tabs. */
  live: LiveFlags
}) {
  const { live } = props
  const envIds = useMemo(() => props.environments.map((e) => e.id), [props.environments])
  const snapshot = useSyncExternalStore(live.subscribe, live.getSnapshot)
  const [filter, setFilter] = useState<FlagFilter>(NO_FILTER)
  const [editing, setEditing] = useState<{ envId: string; key: string | null } | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [queue, setQueue] = useState<{ outbox: Outbox } | null>(null)
  const [pending, setPending] = useState<ReadonlyMap<string, readonly Operation[]>>(new Map())
  const onReady = useCallback((outbox: Outbox) => setQueue({ outbox }), [])
  const onPending = useCallback(
    (envId: string, operations: readonly Operation[]) =>
      setPending((before) => (before.get(envId) === operations ? before : new Map(before).set(envId, operations))),
    [],
  )
  // What the table shows: the server's flags with the edits still queued on top, as the sync route will apply them.
  const shown = useMemo(() => {
    const view = new Map<string, ReadonlyMap<string, Flag>>()
    for (const [envId, flags] of snapshot.flags) {
      const ops = pending.get(envId) ?? []
      view.set(
        envId,
        ops.length ? (applyPending(flags as ReadonlyMap<string, ClientFlag>, ops) as Map<string, Flag>) : flags,
      )
    }
    return view
  }, [snapshot.flags, pending])
  const editable = useEditableFlags(props.project.id, envIds, snapshot.flags, props.offline)
  // What the editor starts from offline: the unexpanded copy, with the queued edits on top.
  const editableShown = useMemo(() => {
    const view = new Map<string, ReadonlyMap<string, Flag>>()
    for (const [envId, flags] of editable) {
      const ops = pending.get(envId) ?? []
      view.set(
        envId,
        ops.length ? (applyPending(flags as ReadonlyMap<string, ClientFlag>, ops) as Map<string, Flag>) : flags,
      )
    }
    return view
  }, [editable, pending])
  const rows = flagRows(shown, envIds, filter)
  const isEditor = props.role === 'admin' || props.role === 'editor'
  // Offline, every flag edit the sync route accepts is queued in the environment's outbox.
  const canEdit = isEditor && (!props.offline || queue !== null)
  const canToggle = canEdit
  const editReason = !isEditor
    ? 'needs the project editor role'
    : 'needs a connection: the outbox that queues edits offline is not open yet'

  async function toggle(env: Environment, flag: Flag) {
    setError(null)
    if (props.offline && queue) {
      await queue.outbox.update(env.id, flag.key, { is_enabled: !flag.is_enabled }, flag.revision)
      return
    }
    try {
      const result = await api<Flag | { id: number; status: string }>(
        'PATCH',
        `/api/environments/${env.id}/flags/${encodeURIComponent(flag.key)}`,
        { is_enabled: !flag.is_enabled },
      )
      if ('key' in result) live.put(env.id, result)
      else setError(`${env.name} requires approval: change request #${result.id} filed for ${flag.key}`)
    } catch (e) {
      setError(errorText(e))
    }
  }

  const defaultEnv = props.environments.find((e) => e.is_default) ?? props.environments[0]
  return (
    <div>
      <div className="toolbar">
        <h2>Flags</h2>
        <span className="status" id="live-status" data-state={props.offline ? 'cached' : snapshot.state} role="status">
          {props.offline
            ? 'Saved copy'
            : snapshot.state === 'live'
              ? 'Live'
              : snapshot.state === 'connecting'
                ? 'Connecting…'
                : 'Reconnecting…'}
        </span>
        <div className="spacer" />
        <button
          type="button"
          className="primary"
          disabled={!canEdit || !defaultEnv}
          title={canEdit ? undefined : editReason}
          onClick={() => defaultEnv && setEditing({ envId: defaultEnv.id, key: null })}
        >
          New flag
        </button>
      </div>
      <FilterBar filter={filter} onChange={setFilter} />
      {!canEdit ? <p className="hint">Editing flags {editReason}.</p> : null}
      {canEdit && props.offline ? (
        <p className="hint" id="offline-editing">
          Offline: switches, the editor and new flags are queued and delivered when the service is reachable. Promoting
          and history need a connection.
        </p>
      ) : null}
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
      {isEditor && props.environments.length ? (
        <Suspense fallback={null}>
          <OfflineEdits environments={props.environments} actor={props.actor} onReady={onReady} onPending={onPending} />
        </Suspense>
      ) : null}
      <div className="table-wrap">
        <table className="flags">
          <caption className="sr-only">Flags of {props.project.name} by environment</caption>
          <thead>
            <tr>
              <th scope="col">Flag</th>
              {props.environments.map((env) => (
                <th scope="col" key={env.id}>
                  <span
                    className="swatch"
                    aria-hidden="true"
                    ref={(el) => el?.style.setProperty('background', env.color)}
                  />
                  {env.name}
                  {env.require_approval ? <span className="badge">approval</span> : null}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.length === 0 ? (
              <tr>
                <td colSpan={props.environments.length + 1} className="hint">
                  {snapshot.flags.size === 0 || filter === NO_FILTER ? 'No flags yet.' : 'No flag matches the filter.'}
                </td>
              </tr>
            ) : null}
            {rows.map((row) => {
              const any = [...row.byEnvironment.values()][0]
              return (
                <tr key={row.key} data-flag={row.key}>
                  <th scope="row">
                    <span className="flag-key">{row.key}</span>
                    <span className="flag-type">{any?.flag_type ?? 'boolean'}</span>
                    {any?.description ? <span className="flag-desc">{any.description}</span> : null}
                  </th>
                  {props.environments.map((env) => {
                    const flag = row.byEnvironment.get(env.id)
                    if (!flag) {
                      return (
                        <td key={env.id} data-env={env.slug} className="absent">
                          not in {env.name}
                        </td>
                      )
                    }
                    const served = servedAtGlance(flag)
                    return (
                      <td key={env.id} data-env={env.slug} data-enabled={String(flag.is_enabled)}>
                        <button
                          type="button"
                          role="switch"
                          aria-checked={flag.is_enabled}
                          aria-label={`${row.key} in ${env.name}`}
                          className="switch"
                          disabled={!canToggle}
                          title={canToggle ? undefined : editReason}
                          onClick={() => void toggle(env, flag)}
                        >
                          {flag.is_enabled ? 'On' : 'Off'}
                        </button>
                        <span className="served" title="what users matching no rule get">
                          {served.value}
                        </span>
                        {served.varies.length ? <span className="varies">{served.varies.join(' · ')}</span> : null}
                        <button
                          type="button"
                          className="ghost"
                          aria-label={`Edit ${row.key} in ${env.name}`}
                          onClick={() => setEditing({ envId: env.id, key: row.key })}
                        >
                          Edit
                        </button>
                      </td>
                    )
                  })}
                </tr>
              )
            })}
          </tbody>
        </table>
      </div>
      {editing ? (
        <FlagEditor
          environments={props.environments}
          envId={editing.envId}
          flagKey={editing.key}
          projectId={props.project.id}
          readOnly={!canEdit}
          readOnlyReason={editReason}
          offline={props.offline}
          outbox={queue?.outbox ?? null}
          saved={editing.key === null ? undefined : editableShown.get(editing.envId)?.get(editing.key)}
          savedRevision={editing.key === null ? undefined : editable.get(editing.envId)?.get(editing.key)?.revision}
          exists={(envId, key) => shown.get(envId)?.has(key) ?? false}
          knownKeys={[...new Set([...shown.values()].flatMap((m) => [...m.keys()]))].sort()}
          onClose={() => setEditing(null)}
          onSaved={(envId, flag) => live.put(envId, flag)}
          role={props.role}
          // The revision of the flag the page shows (stream and REST copy carry the same change-log revision).
          revisionOf={(envId, key) =>
            snapshot.flags.get(envId)?.get(key)?.revision ?? editable.get(envId)?.get(key)?.revision
          }
          onDeleted={(envIds, key) => {
            // Offline the queued delete hides the flag through the pending operations instead.
            if (!props.offline) for (const envId of envIds) live.remove(envId, key)
          }}
        />
      ) : null}
    </div>
  )
}

function FilterBar(props: { filter: FlagFilter; onChange: (f: FlagFilter) => void }) {
  const { filter, onChange } = props
  return (
    <search className="filters">
      <label>
        Search
        <input type="search" value={filter.search} onChange={(e) => onChange({ ...filter, search: e.target.value })} />
      </label>
      <label>
        Tag
        <input
          value={filter.tag}
          placeholder="#tag"
          onChange={(e) => onChange({ ...filter, tag: e.target.value })}
          aria-describedby="tag-hint"
        />
      </label>
      <span id="tag-hint" className="sr-only">
        Tags are #words in flag descriptions
      </span>
      <label>
        Type
        <select value={filter.type} onChange={(e) => onChange({ ...filter, type: e.target.value as FlagType | 'all' })}>
          <option value="all">any</option>
          <option value="boolean">boolean</option>
          <option value="string">string</option>
          <option value="integer">integer</option>
          <option value="json">json</option>
        </select>
      </label>
      <label>
        State
        <select value={filter.state} onChange={(e) => onChange({ ...filter, state: e.target.value as StateFilter })}>
          <option value="all">any</option>
          <option value="on">on everywhere</option>
          <option value="off">off everywhere</option>
          <option value="mixed">on in some</option>
        </select>
      </label>
    </search>
  )
}
