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
  const users = useUsers()
  const { setMeta, archive } = useFlagLifecycle(props.projectId)
  const [tags, setTags] = useState(props.tags.join(', '))
  const [owner, setOwner] = useState(props.owner === null ? '' : String(props.owner))
  const [saved, setSaved] = useState(false)
  const save = () => {
    setSaved(false)
    const input = { key: props.flagKey, tags: tagsFromText(tags), owner: owner === '' ? null : Number(owner) }
    setMeta.mutate(input, { onSuccess: () => setSaved(true) })
  }
  const archiveFlag = () => archive.mutate(props.flagKey, { onSuccess: props.onArchived })
  return (
    <details open className="flag-details">
      <summary>Tags, owner and archive</summary>
      <fieldset disabled={props.disabled}>
        <label>
          Tags
          <input value={tags} onChange={(e) => setTags(e.target.value)} placeholder="payments, web" />
        </label>
        <label>
          Owner
          <select value={owner} onChange={(e) => setOwner(e.target.value)}>
            <option value="">nobody</option>
            {(users.data ?? []).map((u) => (
              <option key={u.id} value={u.id}>
                {u.name || u.email}
              </option>
            ))}
          </select>
        </label>
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
