import { applyPending, type ClientFlag } from '@flagsync/flag-client'
import type { FlagType, Operation } from '@flagsync/protocol'
import type { LiveState } from './live-flags.js'
import type { Flag, FlagLifecycle, Role } from './types.js'

export type StateFilter = 'all' | 'on' | 'off' | 'mixed'

export interface FlagFilter {
  search: string
  type: FlagType | 'all'
  state: StateFilter
  /** One of the flag's tags (the service's `tags`), or '' for any. */
  tag: string
  /** Only flags stale in at least one environment. */
  stale: boolean
}

/** A row's lifecycle from the REST copies: the project's tags and owner, and each environment's times and stale mark. */
export interface RowMeta {
  tags: string[]
  owner: number | null
  byEnvironment: ReadonlyMap<string, FlagLifecycle>
  /** Equal for equal lifecycles: the table re-renders a row only when it changes. */
  signature: string
}

export interface FlagRow {
  key: string
  /** environment id → flag there (missing when the flag does not exist in it). */
  byEnvironment: ReadonlyMap<string, Flag>
  /** Absent until a REST copy of the flag was read (the stream carries definitions only). */
  meta?: RowMeta
}

/** The lifecycle of a key from the environments' REST copies (`GET …/flags`), where read. */
function rowMeta(
  saved: ReadonlyMap<string, ReadonlyMap<string, Flag>>,
  environmentIds: readonly string[],
  key: string,
): RowMeta | undefined {
  const byEnvironment = new Map<string, FlagLifecycle>()
  for (const env of environmentIds) {
    const flag = saved.get(env)?.get(key)
    if (flag?.tags === undefined || flag.last_changed_at === undefined) continue
    const { tags, owner = null, last_changed_at, last_evaluated_at = null, stale = null } = flag
    byEnvironment.set(env, { tags, owner, last_changed_at, last_evaluated_at, stale })
  }
  const first = [...byEnvironment.values()][0]
  if (!first) return undefined
  const signature = JSON.stringify([...byEnvironment])
  return { tags: first.tags, owner: first.owner, byEnvironment, signature }
}

/**
 * The flags of a project, one row per key across the given environments, filtered and sorted by key. `saved`
 * (the REST copies) gives each row its lifecycle, which the tag and stale filters read.
 */
export function flagRows(
  flags: ReadonlyMap<string, ReadonlyMap<string, Flag>>,
  environmentIds: readonly string[],
  filter: FlagFilter,
  saved: ReadonlyMap<string, ReadonlyMap<string, Flag>> = new Map(),
): FlagRow[] {
  const rows = new Map<string, Map<string, Flag>>()
  for (const env of environmentIds) {
    for (const [key, flag] of flags.get(env) ?? []) {
      const row = rows.get(key) ?? new Map<string, Flag>()
      rows.set(key, row.set(env, flag))
    }
  }
  const search = filter.search.trim().toLowerCase()
  const tag = filter.tag.trim().toLowerCase()
  return [...rows]
    .map(([key, byEnvironment]): FlagRow => ({ key, byEnvironment, meta: rowMeta(saved, environmentIds, key) }))
    .filter(({ key, byEnvironment, meta }) => {
      const any = [...byEnvironment.values()]
      if (
        search &&
        !key.toLowerCase().includes(search) &&
        !any.some((f) => f.description?.toLowerCase().includes(search))
      )
        return false
      if (filter.type !== 'all' && !any.some((f) => (f.flag_type ?? 'boolean') === filter.type)) return false
      if (tag && !meta?.tags.includes(tag)) return false
      if (filter.stale && ![...(meta?.byEnvironment.values() ?? [])].some((l) => l.stale !== null)) return false
      if (filter.state !== 'all') {
        const on = any.filter((f) => f.is_enabled).length
        const state = on === 0 ? 'off' : on === any.length ? 'on' : 'mixed'
        if (state !== filter.state) return false
      }
      return true
    })
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
}

/**
 * The service reports a prerequisite cycle as `prerequisite cycle: a -> b -> a`.
 * In words: "a requires b, and b requires a, so none of them could ever be
 * evaluated". Other messages pass through unchanged.
 */
export function explainCycle(message: string): string {
  const match = /prerequisite cycle: (.+)$/.exec(message)
  if (!match?.[1]) return message
  const keys = match[1].split(' -> ').map((k) => k.trim())
  if (keys.length < 2) return message
  const steps = keys
    .slice(0, -1)
    .map((k, i) => (k === keys[i + 1] ? `“${k}” requires itself` : `“${k}” requires “${keys[i + 1]}”`))
  const list = steps.length === 1 ? steps[0] : `${steps.slice(0, -1).join(', ')} and ${steps.at(-1)}`
  return `These prerequisites go round in a circle: ${list}. Each would wait for the other forever, so the service refuses the save. Remove one of these prerequisites.`
}

/** Flags by environment and key, as the flag table and the editor read them. */
export type FlagsByEnvironment = ReadonlyMap<string, ReadonlyMap<string, Flag>>

/** `flags` with each environment's queued operations on top, as the sync route will apply them. */
export function withPending(
  flags: FlagsByEnvironment,
  pending: ReadonlyMap<string, readonly Operation[]>,
): Map<string, ReadonlyMap<string, Flag>> {
  const view = new Map<string, ReadonlyMap<string, Flag>>()
  for (const [envId, byKey] of flags) {
    const ops = pending.get(envId) ?? []
    view.set(
      envId,
      ops.length ? (applyPending(byKey as ReadonlyMap<string, ClientFlag>, ops) as Map<string, Flag>) : byKey,
    )
  }
  return view
}

/** Every flag key of any environment, sorted: the keys a prerequisite can name. */
export function knownKeys(flags: FlagsByEnvironment): string[] {
  return [...new Set([...flags.values()].flatMap((m) => [...m.keys()]))].sort()
}

/** The flag table's connection badge: the saved copy offline, else the stream's state. */
export function liveLabel(offline: boolean, state: LiveState): string {
  if (offline) return 'Saved copy'
  return state === 'live' ? 'Live' : state === 'connecting' ? 'Connecting…' : 'Reconnecting…'
}

/**
 * Whether the caller may edit flags, and why not: it takes the project editor
 * role, and offline an open outbox to queue the edits in.
 */
export function flagEditAccess(role: Role, offline: boolean, outboxOpen: boolean) {
  const isEditor = role === 'admin' || role === 'editor'
  return {
    isEditor,
    canEdit: isEditor && (!offline || outboxOpen),
    reason: !isEditor
      ? 'needs the project editor role'
      : 'needs a connection: the outbox that queues edits offline is not open yet',
  }
}
