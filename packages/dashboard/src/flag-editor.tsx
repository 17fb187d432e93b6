import { useState } from 'react'
import { DeleteFlag } from './delete-flag.js'
import { Dialog } from './dialog.js'
import { DraftPreview } from './draft-preview.js'
import { type BuiltFlag, buildFlag, changesOf, type Draft, saveLabel } from './flag-draft.js'
import { FlagFields } from './flag-fields.js'
import { FlagDetails, type MetaText, metaOf, NewFlagMeta } from './flag-lifecycle.js'
import { History } from './history.js'
import { Promote } from './promote.js'
import { ScheduleChange } from './schedules.js'
import type { Environment } from './types.js'
import { type FlagEditorProps, useFlagDraft, useFlagSave } from './use-flag-editor.js'
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
export function FlagEditor(props: FlagEditorProps) {
  const creating = props.flagKey === null
  const env = props.environments.find((e) => e.id === props.envId)
  const loaded = useFlagDraft(props)
  const [targets, setTargets] = useState<'all' | string>('all')
  const [meta, setMeta] = useState<MetaText>({ tags: '', owner: '' })
  const { draft, error } = loaded
  const built = draft ? buildFlag(draft) : null
  const weights = summarizeWeights(built?.flag.variants ?? [])
  const blocked = (built?.problems.length ?? 0) > 0 || weights.problem !== null
  const { notice, save } = useFlagSave(props, { ...loaded, blocked })
  const title = creating ? 'New flag' : `${props.flagKey} in ${env?.name ?? 'environment'}`
  if (!draft || !built) {
    // The same Dialog as the loaded editor's, so it stays mounted when the draft arrives (it returns focus on close).
    return (
      <Dialog title={title} onClose={props.onClose} wide>
        <EditorPending props={props} error={error} openedOffline={loaded.openedOffline} env={env} />
      </Dialog>
    )
  }
  const { flag, problems } = built
  const set = (patch: Partial<Draft>) => loaded.setDraft({ ...draft, ...patch })
  const creation = creating ? { environments: props.environments, targets, setTargets } : null
  return (
    <Dialog title={title} onClose={props.onClose} wide>
      <form
        onSubmit={(e) => save(e, { flag, start: loaded.start ?? draft, targets, meta: metaOf(meta) })}
        className="editor"
      >
        <fieldset disabled={props.readOnly}>
          <EditorNotes props={props} env={env} />
          <FlagFields
            draft={draft}
            set={set}
            creation={creation}
            weights={weights}
            segments={loaded.segments}
            knownKeys={props.knownKeys}
          />
          {creating ? <NewFlagMeta value={meta} onChange={setMeta} offline={props.offline} /> : null}
        </fieldset>
        {!creating && env && !props.offline ? (
          <DraftPreview
            envId={env.id}
            saved={loaded.start ? buildFlag(loaded.start).flag : null}
            draft={flag}
            blocked={blocked}
          />
        ) : null}
        {!creating && env ? (
          <ServiceViews
            props={props}
            env={env}
            flagKey={flag.key}
            edited={loaded.start ? changesOf(buildFlag(loaded.start).flag, flag) : {}}
          />
        ) : null}
        <EditorMessages problems={problems} error={error} notice={notice} />
        <EditorActions props={props} env={env} flag={flag} blocked={blocked} openedOffline={loaded.openedOffline} />
      </form>
    </Dialog>
  )
}

/**
 * The editor before its draft: loading, or why it cannot load. Opened offline before the saved copy had this flag
 * (the stream shows it first) there is nothing to edit, but a delete needs only the key and the revision the table
 * shows.
 */
function EditorPending(args: {
  props: FlagEditorProps
  error: string | null
  openedOffline: boolean
  env: Environment | undefined
}) {
  const { props, env } = args
  const deleteKey = args.openedOffline ? props.flagKey : null
  return (
    <>
      {args.error ? (
        <p role="alert" className="error">
          {args.error}
        </p>
      ) : (
        <p>Loading…</p>
      )}
      {deleteKey !== null && env ? (
        <div className="actions">
          <EditorDelete props={props} env={env} flagKey={deleteKey} openedOffline />
        </div>
      ) : null}
    </>
  )
}

/** Why the fields cannot be edited, and where an offline save goes. */
function EditorNotes({ props, env }: { props: FlagEditorProps; env: Environment | undefined }) {
  const creating = props.flagKey === null
  return (
    <>
      {props.readOnly ? <p className="hint">Read-only: editing {props.readOnlyReason}.</p> : null}
      {props.offline && !props.readOnly ? (
        <p className="notice" id="editor-offline">
          Offline: {creating ? 'the new flag is' : 'your changes are'} queued and delivered when the service is
          reachable
          {env?.require_approval && !creating ? `, where ${env.name} turns them into a change request` : ''}.
        </p>
      ) : null}
    </>
  )
}

/**
 * Promote, history and "apply at…" (the edited fields, scheduled) of an existing flag: the service compares, keeps
 * and runs them, so offline they wait.
 */
function ServiceViews(args: {
  props: FlagEditorProps
  env: Environment
  flagKey: string
  edited: Record<string, unknown>
}) {
  const { props, env, flagKey } = args
  if (props.offline) {
    return (
      <p className="hint" id="editor-needs-connection">
        Promote and history need a connection: the service compares and keeps them.
      </p>
    )
  }
  return (
    <>
      <FlagDetails
        projectId={props.projectId}
        flagKey={flagKey}
        tags={props.saved?.tags ?? []}
        owner={props.saved?.owner ?? null}
        disabled={props.readOnly}
        onArchived={() => {
          props.onDeleted(
            props.environments.map((e) => e.id),
            flagKey,
          )
          props.onClose()
        }}
      />
      <ScheduleChange envId={env.id} flagKey={flagKey} patch={args.edited} disabled={props.readOnly} />
      <Promote
        flagKey={flagKey}
        from={env}
        environments={props.environments}
        disabled={props.readOnly}
        onPromoted={props.onSaved}
      />
      <details>
        <summary>History in {env.name}</summary>
        <History
          url={`/api/environments/${env.id}/flags/${encodeURIComponent(flagKey)}/history?limit=50`}
          title={`History of ${flagKey} in ${env.name}`}
        />
      </details>
    </>
  )
}

function EditorMessages(props: { problems: string[]; error: string | null; notice: string | null }) {
  return (
    <>
      {props.problems.length ? (
        <ul className="error" aria-live="polite">
          {props.problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      ) : null}
      {props.error ? (
        <p role="alert" className="error" id="editor-error">
          {props.error}
        </p>
      ) : null}
      {props.notice ? (
        <p role="status" className="notice">
          {props.notice}
        </p>
      ) : null}
    </>
  )
}

function EditorActions(args: {
  props: FlagEditorProps
  env: Environment | undefined
  flag: BuiltFlag
  blocked: boolean
  openedOffline: boolean
}) {
  const { props, env, flag } = args
  const creating = props.flagKey === null
  return (
    <div className="actions">
      {!creating && env ? (
        <EditorDelete props={props} env={env} flagKey={flag.key} openedOffline={args.openedOffline} />
      ) : null}
      <button type="button" onClick={props.onClose}>
        Cancel
      </button>
      <button type="submit" className="primary" disabled={props.readOnly || args.blocked}>
        {saveLabel(props.offline, creating, env?.require_approval ?? false)}
      </button>
    </div>
  )
}

/** The editor's "Delete flag": closes the editor once the flag is deleted (or the delete queued). */
function EditorDelete(args: { props: FlagEditorProps; env: Environment; flagKey: string; openedOffline: boolean }) {
  const { props, env, flagKey } = args
  return (
    <DeleteFlag
      flagKey={flagKey}
      envId={env.id}
      environments={props.environments}
      role={props.role}
      offline={props.offline || args.openedOffline}
      outbox={props.outbox}
      presentIn={(id) => props.exists(id, flagKey)}
      revisionOf={(id) => props.revisionOf(id, flagKey)}
      onDeleted={(ids) => {
        props.onDeleted(ids, flagKey)
        props.onClose()
      }}
    />
  )
}
