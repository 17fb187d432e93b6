import { useId, useMemo, useState, useSyncExternalStore } from 'react'
import { useLocation, useSearch } from 'wouter'
import { EnvironmentSelect } from './environment-select.js'
import { History } from './history.js'
import type { LiveFlags } from './live-flags.js'
import { navigate } from './route.js'
import type { Environment, Project } from './types.js'
import { useUsers } from './use-users.js'

/** A history view's filters as the page URL holds them (`?tab=history&flag=checkout&person=12&from=2026-11-01`). */
export interface HistoryFilter {
  flag: string
  /** An environment id. */
  environment: string
  /** A user id. */
  person: string
  /** First day shown, `YYYY-MM-DD` in the reader's time zone. */
  from: string
  /** Last day shown, inclusive. */
  to: string
}

const FIELDS = ['flag', 'environment', 'person', 'from', 'to'] as const

/** The filters of a page URL's query string; a missing one is empty. */
export function filterOf(search: string): HistoryFilter {
  const params = new URLSearchParams(search)
  return Object.fromEntries(FIELDS.map((f) => [f, params.get(f) ?? ''])) as unknown as HistoryFilter
}

/** The page URL's query string with these filters (other parameters, like `tab`, kept; empty filters left out). */
export function searchWith(search: string, filter: HistoryFilter): string {
  const params = new URLSearchParams(search)
  for (const f of FIELDS) {
    if (filter[f] === '') params.delete(f)
    else params.set(f, filter[f])
  }
  return params.toString()
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/

/** Midnight starting a day in the reader's zone, `days` later, as the service's ISO 8601 (UTC); undefined if no day. */
function dayStart(day: string, days = 0): string | undefined {
  const m = DAY.exec(day)
  if (!m) return undefined
  return new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + days).toISOString()
}

/**
 * The project's changes URL for these filters: `from` the first day's midnight, `to` the midnight after the
 * last day (the service's `to` is exclusive), both in the reader's time zone.
 */
export function changesUrl(projectId: string, filter: HistoryFilter, limit = 50): string {
  const params = new URLSearchParams({ limit: String(limit) })
  if (filter.flag) params.set('flag', filter.flag)
  if (filter.environment) params.set('environment_id', filter.environment)
  if (filter.person) params.set('actor', filter.person)
  const from = dayStart(filter.from)
  const to = dayStart(filter.to, 1)
  if (from) params.set('from', from)
  if (to) params.set('to', to)
  return `/api/projects/${encodeURIComponent(projectId)}/changes?${params}`
}

/** The project's History tab: filters kept in the URL (a filtered view is a link to share), then the entries. */
export function ProjectHistory(props: { project: Project; environments: Environment[]; live: LiveFlags }) {
  const { project, environments } = props
  const [pathname] = useLocation()
  const search = useSearch()
  const filter = filterOf(search)
  const set = (next: Partial<HistoryFilter>) => {
    const query = searchWith(search, { ...filter, ...next })
    navigate(`${pathname}${query ? `?${query}` : ''}`)
  }
  const environmentName = useMemo(() => {
    const byId = new Map(environments.map((e) => [e.id, e.name]))
    return (id: string) => byId.get(id)
  }, [environments])
  return (
    <>
      <HistoryFilterBar filter={filter} environments={environments} live={props.live} onChange={set} />
      <History
        url={changesUrl(project.id, filter)}
        title={`Changes in ${project.name}`}
        environmentName={environmentName}
      />
    </>
  )
}

function HistoryFilterBar(props: {
  filter: HistoryFilter
  environments: Environment[]
  live: LiveFlags
  onChange: (next: Partial<HistoryFilter>) => void
}) {
  const { filter, onChange } = props
  const users = useUsers()
  const snapshot = useSyncExternalStore(props.live.subscribe, props.live.getSnapshot)
  const flagKeys = useMemo(() => {
    const keys = new Set<string>()
    for (const flags of snapshot.flags.values()) for (const key of flags.keys()) keys.add(key)
    return [...keys].sort()
  }, [snapshot])
  const listId = useId()
  const any = Object.values(filter).some((v) => v !== '')
  return (
    <search className="filters" aria-label="Filter changes">
      <FlagInput value={filter.flag} listId={listId} onCommit={(flag) => onChange({ flag })} />
      <datalist id={listId}>
        {flagKeys.map((k) => (
          <option key={k} value={k} />
        ))}
      </datalist>
      <EnvironmentSelect
        label="Environment"
        value={filter.environment}
        environments={props.environments}
        onChange={(environment) => onChange({ environment })}
        anyLabel="all"
      />
      <label>
        Person
        <select value={filter.person} onChange={(e) => onChange({ person: e.target.value })}>
          <option value="">anyone</option>
          {(users.data ?? []).map((u) => (
            <option key={u.id} value={String(u.id)}>
              {u.name ? `${u.name} (${u.email})` : u.email}
            </option>
          ))}
        </select>
      </label>
      <label>
        From
        <input type="date" value={filter.from} onChange={(e) => onChange({ from: e.target.value })} />
      </label>
      <label>
        To
        <input type="date" value={filter.to} onChange={(e) => onChange({ to: e.target.value })} />
      </label>
      {any ? (
        <button type="button" onClick={() => onChange({ flag: '', environment: '', person: '', from: '', to: '' })}>
          Clear filters
        </button>
      ) : null}
    </search>
  )
}

/** The flag key filter applies on Enter or on leaving the field, not on every keystroke. */
function FlagInput(props: { value: string; listId: string; onCommit: (flag: string) => void }) {
  const [draft, setDraft] = useState<string | null>(null)
  const commit = () => {
    if (draft !== null && draft.trim() !== props.value) props.onCommit(draft.trim())
    setDraft(null)
  }
  return (
    <label>
      Flag
      <input
        type="search"
        list={props.listId}
        value={draft ?? props.value}
        placeholder="any flag"
        onChange={(e) => setDraft(e.target.value)}
        onBlur={commit}
        onKeyDown={(e) => {
          if (e.key === 'Enter') commit()
        }}
      />
    </label>
  )
}
