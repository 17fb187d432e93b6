import type { FlagType, Operation } from '@flagsync/protocol'
import { lazy, Suspense, useMemo, useState, useSyncExternalStore } from 'react'
import { useEditableFlags } from './editable-flags.js'
import { ErrorLine } from './error-line.js'
import { FlagEditor } from './flag-editor.js'
import { ArchivedFlags, useOwnerName } from './flag-lifecycle.js'
import { FlagTable } from './flag-table.js'
import {
  type FlagFilter,
  type FlagRow,
  type FlagsByEnvironment,
  flagEditAccess,
  flagRows,
  knownKeys,
  liveLabel,
  type StateFilter,
  withPending,
} from './flag-view.js'
import { useFlagToggle, useQueuedEdits } from './flags-panel-state.js'
import type { LiveFlags } from './live-flags.js'
import type { Outbox } from './offline-edits.js'
import type { Environment, Flag, Project, Role } from './types.js'
import { useArchivedFlags } from './use-flag-lifecycle.js'
import { useSegments } from './use-projects.js'

const NO_FILTER: FlagFilter = { search: '', type: 'all', state: 'all', tag: '', stale: false }

// The outboxes (sync client and Dexie) load after the first render: not part of the first load.
const OfflineEdits = lazy(() => import('./offline-edits.js'))

interface FlagsPanelProps {
  project: Project
  environments: Environment[]
  role: Role
  offline: boolean
  actor: string
  /** The project's dashboard stream, opened by the project page so that it outlives a switch of tabs. */
  live: LiveFlags
}

/** One table per project: a row per flag key, a column per environment, live from the dashboard stream. */
export function FlagsPanel(props: FlagsPanelProps) {
  const { live } = props
  const envIds = useMemo(() => props.environments.map((e) => e.id), [props.environments])
  const snapshot = useSyncExternalStore(live.subscribe, live.getSnapshot)
  const [filter, setFilter] = useState<FlagFilter>(NO_FILTER)
  const [editing, setEditing] = useState<{ envId: string; key: string | null } | null>(null)
  const [view, setView] = useState<'live' | 'archived'>('live')
  const queued = useQueuedEdits(props.offline)
  // What the table shows: the server's flags with the edits still queued on top, as the sync route will apply them.
  const shown = useMemo(() => withPending(snapshot.flags, queued.pending), [snapshot.flags, queued.pending])
  const { saved: editable, error: readError } = useEditableFlags(envIds, snapshot.flags, props.offline)
  // Read with the page, so the editor offers the project's segments offline too.
  useSegments(props.project.id)
  const access = flagEditAccess(props.role, props.offline, queued.outbox !== null)
  const { error, toggle } = useFlagToggle(live, props.offline, queued.outbox)
  const defaultEnv = props.environments.find((e) => e.is_default) ?? props.environments[0]
  // Grouping 1 000 flags by key takes ~20 ms: once per change of the flags or the filter, not on every render.
  const rows = useMemo(() => flagRows(shown, envIds, filter, editable), [shown, envIds, filter, editable])
  const tags = useMemo(() => tagsOf(rows, filter.tag), [rows, filter.tag])
  return (
    <div>
      <FlagsToolbar
        status={{ state: props.offline ? 'cached' : snapshot.state, label: liveLabel(props.offline, snapshot.state) }}
        canCreate={access.canEdit && defaultEnv !== undefined}
        reason={access.canEdit ? undefined : access.reason}
        onNew={() => defaultEnv && setEditing({ envId: defaultEnv.id, key: null })}
      />
      <ViewSwitch view={view} onChange={setView} />
      <FilterBar filter={filter} onChange={setFilter} tags={tags} />
      <EditingNotes canEdit={access.canEdit} reason={access.reason} offline={props.offline} />
      <ErrorLine errors={[error, readError]} />
      {access.isEditor && props.environments.length ? <QueuedEdits panel={props} queued={queued} /> : null}
      <PanelBody
        panel={props}
        envIds={envIds}
        view={view}
        rows={rows}
        saved={editable}
        empty={snapshot.flags.size === 0 || filter === NO_FILTER ? 'No flags yet.' : 'No flag matches the filter.'}
        access={access}
        onToggle={(env, flag) => void toggle(env, flag)}
        onEdit={(envId, key) => setEditing({ envId, key })}
      />
      {editing ? (
        <PanelEditor
          panel={props}
          editing={editing}
          flags={{ stream: snapshot.flags, shown, editable, pending: queued.pending }}
          access={access}
          outbox={queued.outbox}
          onClose={() => setEditing(null)}
        />
      ) : null}
    </div>
  )
}

/** The tags the filter offers: every tag of the rows, and the one filtered by even when no row has it now. */
function tagsOf(rows: readonly FlagRow[], filtered: string | undefined): string[] {
  return [...new Set(rows.flatMap((r) => r.meta?.tags ?? []).concat(filtered ? [filtered] : []))].sort()
}

/** The queued edits of every environment (its code loads on first use), reporting to the panel's queue state. */
function QueuedEdits(props: { panel: FlagsPanelProps; queued: ReturnType<typeof useQueuedEdits> }) {
  return (
    <Suspense fallback={null}>
      <OfflineEdits
        environments={props.panel.environments}
        actor={props.panel.actor}
        onReady={props.queued.onReady}
        onPending={props.queued.onPending}
      />
    </Suspense>
  )
}

/** The live flags' table, or the project's archived flags (read only while that view is shown) with Restore. */
function PanelBody(props: {
  panel: FlagsPanelProps
  envIds: string[]
  view: 'live' | 'archived'
  rows: FlagRow[]
  /** The REST copies (segment references kept), which the cells describe when they match the stream's revision. */
  saved: FlagsByEnvironment
  empty: string
  access: { canEdit: boolean; reason: string }
  onToggle: (env: Environment, flag: Flag) => void
  onEdit: (envId: string, key: string) => void
}) {
  const { panel, access } = props
  const [now] = useState(() => Date.now())
  const ownerName = useOwnerName()
  const archived = useArchivedFlags(panel.project.id, props.envIds, props.view === 'archived' && !panel.offline)
  if (props.view === 'archived') {
    return (
      <ArchivedFlags
        projectId={panel.project.id}
        environments={panel.environments}
        archived={archived.archived}
        error={archived.error}
        canRestore={access.canEdit && !panel.offline}
        reason={panel.offline ? 'needs a connection' : access.reason}
      />
    )
  }
  return (
    <FlagTable
      projectName={panel.project.name}
      environments={panel.environments}
      rows={props.rows}
      saved={props.saved}
      empty={props.empty}
      blocked={access.canEdit ? null : access.reason}
      ownerName={ownerName}
      now={now}
      onToggle={props.onToggle}
      onEdit={props.onEdit}
    />
  )
}

/** The panel's heading, the stream's state, and "New flag" with why it cannot be used. */
function FlagsToolbar(props: {
  status: { state: string; label: string }
  canCreate: boolean
  reason: string | undefined
  onNew: () => void
}) {
  return (
    <div className="toolbar">
      <h2>Flags</h2>
      <span className="status" id="live-status" data-state={props.status.state} role="status">
        {props.status.label}
      </span>
      <div className="spacer" />
      <button type="button" className="primary" disabled={!props.canCreate} title={props.reason} onClick={props.onNew}>
        New flag
      </button>
    </div>
  )
}

function EditingNotes(props: { canEdit: boolean; reason: string; offline: boolean }) {
  return (
    <>
      {!props.canEdit ? <p className="hint">Editing flags {props.reason}.</p> : null}
      {props.canEdit && props.offline ? (
        <p className="hint" id="offline-editing">
          Offline: switches, the editor and new flags are queued and delivered when the service is reachable. Promoting
          and history need a connection.
        </p>
      ) : null}
    </>
  )
}

/**
 * The editor opened from the table. Offline it starts from the editable copy
 * (segment references unexpanded) with the queued edits on top; a delete
 * checks against the revision the page shows (stream and REST copy carry the
 * same change-log revision).
 */
function PanelEditor(props: {
  panel: FlagsPanelProps
  editing: { envId: string; key: string | null }
  flags: {
    stream: FlagsByEnvironment
    shown: FlagsByEnvironment
    editable: FlagsByEnvironment
    pending: ReadonlyMap<string, readonly Operation[]>
  }
  access: { canEdit: boolean; reason: string }
  outbox: Outbox | null
  onClose: () => void
}) {
  const { panel, editing, flags } = props
  const { live } = panel
  const editableShown = useMemo(() => withPending(flags.editable, flags.pending), [flags.editable, flags.pending])
  const existing = editing.key
  return (
    <FlagEditor
      environments={panel.environments}
      envId={editing.envId}
      flagKey={existing}
      projectId={panel.project.id}
      readOnly={!props.access.canEdit}
      readOnlyReason={props.access.reason}
      offline={panel.offline}
      outbox={props.outbox}
      saved={existing === null ? undefined : editableShown.get(editing.envId)?.get(existing)}
      savedRevision={existing === null ? undefined : flags.editable.get(editing.envId)?.get(existing)?.revision}
      exists={(envId, key) => flags.shown.get(envId)?.has(key) ?? false}
      knownKeys={knownKeys(flags.shown)}
      onClose={props.onClose}
      onSaved={(envId, flag) => live.put(envId, flag)}
      role={panel.role}
      revisionOf={(envId, key) =>
        flags.stream.get(envId)?.get(key)?.revision ?? flags.editable.get(envId)?.get(key)?.revision
      }
      onDeleted={(envIds, key) => {
        // Offline the queued delete hides the flag through the pending operations instead.
        if (!panel.offline) for (const envId of envIds) live.remove(envId, key)
      }}
    />
  )
}

/** Live flags or the archived ones: two views of the panel, one pressed. */
function ViewSwitch(props: { view: 'live' | 'archived'; onChange: (view: 'live' | 'archived') => void }) {
  return (
    <fieldset className="view-switch">
      <legend className="sr-only">Which flags</legend>
      <button type="button" aria-pressed={props.view === 'live'} onClick={() => props.onChange('live')}>
        Flags
      </button>
      <button type="button" aria-pressed={props.view === 'archived'} onClick={() => props.onChange('archived')}>
        Archived
      </button>
    </fieldset>
  )
}

function FilterBar(props: { filter: FlagFilter; onChange: (f: FlagFilter) => void; tags: string[] }) {
  const { filter, onChange } = props
  return (
    <search className="filters">
      <label>
        Search
        <input type="search" value={filter.search} onChange={(e) => onChange({ ...filter, search: e.target.value })} />
      </label>
      <label>
        Tag
        <select value={filter.tag} onChange={(e) => onChange({ ...filter, tag: e.target.value })}>
          <option value="">any</option>
          {props.tags.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </label>
      <label className="check">
        <input
          type="checkbox"
          checked={filter.stale}
          onChange={(e) => onChange({ ...filter, stale: e.target.checked })}
        />
        Stale only
      </label>
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
