import { useCallback, useState } from 'react'
import { ErrorLine } from './error-line.js'
import type { RowMeta } from './flag-view.js'
import type { Environment } from './types.js'
import { type ArchivedByKey, ago, tagsFromText, useFlagLifecycle } from './use-flag-lifecycle.js'
import { useUsers } from './use-users.js'

const STALE_WORDS = { one_value: 'serves one value to everyone', not_evaluated: 'not evaluated' } as const

/** The tags of a row as chips, and its owner: under the flag's key in the table. */
export function RowTags(props: { meta: RowMeta | undefined; ownerName: (id: number) => string }) {
  const { meta } = props
  if (!meta) return null
  return (
    <>
      {meta.tags.length ? (
        <ul className="chips" aria-label="Tags">
          {meta.tags.map((t) => (
            <li key={t} className="chip">
              {t}
            </li>
          ))}
        </ul>
      ) : null}
      {meta.owner !== null ? <span className="flag-owner">owner: {props.ownerName(meta.owner)}</span> : null}
    </>
  )
}

/** One environment's lifecycle in a table cell: last change, last evaluation, and a stale mark saying why. */
export function CellLifecycle(props: { meta: RowMeta | undefined; envId: string; now: number }) {
  const here = props.meta?.byEnvironment.get(props.envId)
  if (!here) return null
  const stale = here.stale
  return (
    <span className="lifecycle">
      changed {ago(here.last_changed_at, props.now)} · evaluated {ago(here.last_evaluated_at, props.now)}
      {stale ? (
        <span className="badge stale" title={`${STALE_WORDS[stale.reason]} since ${stale.since.slice(0, 10)}`}>
          stale: {STALE_WORDS[stale.reason]}
        </span>
      ) : null}
    </span>
  )
}

/** Workspace users by id, for the owner's name (`#id` until the users are read). */
export function useOwnerName(): (id: number) => string {
  const { data } = useUsers()
  return useCallback(
    (id: number) => {
      const user = data?.find((u) => u.id === id)
      return user ? user.name || user.email : `#${id}`
    },
    [data],
  )
}

/** Tags and owner as typed: tags separated by commas or spaces, the owner's user id (`''` for nobody). */
export interface MetaText {
  tags: string
  owner: string
}

/** What the service takes: tags lower-cased and de-duplicated, the owner's id or `null`. */
export const metaOf = (text: MetaText) => ({
  tags: tagsFromText(text.tags),
  owner: text.owner === '' ? null : Number(text.owner),
})

/** The Tags input and the Owner select (the workspace's users), for a new flag and for the editor's details. */
function TagsOwnerFields(props: { value: MetaText; onChange: (value: MetaText) => void }) {
  const users = useUsers()
  const { value, onChange } = props
  return (
    <>
      <label>
        Tags
        <input
          value={value.tags}
          onChange={(e) => onChange({ ...value, tags: e.target.value })}
          placeholder="payments, web"
        />
      </label>
      <label>
        Owner
        <select value={value.owner} onChange={(e) => onChange({ ...value, owner: e.target.value })}>
          <option value="">nobody</option>
          {(users.data ?? []).map((u) => (
            <option key={u.id} value={u.id}>
              {u.name || u.email}
            </option>
          ))}
        </select>
      </label>
    </>
  )
}

/**
 * A new flag's tags and owner, sent with its creation. Offline the flag is queued as an insert per environment,
 * which carries a flag's definition only: they are set from the editor once it is saved.
 */
export function NewFlagMeta(props: { value: MetaText; onChange: (value: MetaText) => void; offline: boolean }) {
  if (props.offline) {
    return <p className="hint">Tags and owner are set once the flag is saved: they need a connection.</p>
  }
  return <TagsOwnerFields value={props.value} onChange={props.onChange} />
}

/**
 * The editor's "Tags, owner and archive": the flag's tags and owner (the same in every environment) with their own
 * save, and archiving it out of every environment of the project.
 */
export function FlagDetails(props: {
  projectId: string
  flagKey: string
  tags: string[]
  owner: number | null
  disabled: boolean
  onArchived: () => void
}) {
  const { setMeta, archive } = useFlagLifecycle(props.projectId)
  const [meta, setText] = useState<MetaText>({
    tags: props.tags.join(', '),
    owner: props.owner === null ? '' : String(props.owner),
  })
  const [saved, setSaved] = useState(false)
  const save = () => {
    setSaved(false)
    setMeta.mutate({ key: props.flagKey, ...metaOf(meta) }, { onSuccess: () => setSaved(true) })
  }
  const archiveFlag = () => archive.mutate(props.flagKey, { onSuccess: props.onArchived })
  return (
    <details open className="flag-details">
      <summary>Tags, owner and archive</summary>
      <fieldset disabled={props.disabled}>
        <TagsOwnerFields value={meta} onChange={setText} />
        <div className="actions">
          <button type="button" onClick={save} disabled={setMeta.isPending}>
            Set tags and owner
          </button>
          <button type="button" className="danger" onClick={archiveFlag} disabled={archive.isPending}>
            Archive in every environment
          </button>
        </div>
      </fieldset>
      {saved ? <p role="status">Tags and owner set for every environment.</p> : null}
      <ErrorLine errors={[setMeta.error, archive.error]} />
    </details>
  )
}

/** The project's archived flags: where each was, when and by whom, and "Restore" (open to editors). */
export function ArchivedFlags(props: {
  projectId: string
  environments: Environment[]
  archived: ArchivedByKey
  error: Error | null
  canRestore: boolean
  reason: string
}) {
  const { restore } = useFlagLifecycle(props.projectId)
  const envName = (id: string) => props.environments.find((e) => e.id === id)?.name ?? id
  const keys = [...props.archived.keys()].sort()
  return (
    <section aria-label="Archived flags" className="archived">
      <ErrorLine errors={[props.error, restore.error]} />
      {keys.length === 0 ? <p className="hint">No archived flags.</p> : null}
      <ul>
        {keys.map((key) => {
          const byEnv = props.archived.get(key) ?? new Map()
          const first = [...byEnv.values()][0]
          return (
            <li key={key} data-archived={key}>
              <span className="flag-key">{key}</span>{' '}
              <span className="hint">
                archived {first?.archived.at.slice(0, 10)} by {first?.archived.by ?? 'someone'}, was in{' '}
                {[...byEnv.keys()].map(envName).join(', ')}
              </span>{' '}
              <button
                type="button"
                onClick={() => restore.mutate(key)}
                disabled={!props.canRestore || restore.isPending}
                title={props.canRestore ? undefined : props.reason}
              >
                Restore {key}
              </button>
            </li>
          )
        })}
      </ul>
    </section>
  )
}
