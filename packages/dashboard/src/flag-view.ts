import { applyPending, type ClientFlag } from '@flagsync/flag-client'
import type { FlagType, Operation } from '@flagsync/protocol'
import type { LiveState } from './live-flags.js'
import type { Flag, Role } from './types.js'

export type StateFilter = 'all' | 'on' | 'off' | 'mixed'

export interface FlagFilter {
  search: string
  type: FlagType | 'all'
  state: StateFilter
  /** A word of the description ("tags" are #words in descriptions: the spec's flag has no tag field). */
  tag: string
}

export interface FlagRow {
  key: string
  /** environment id → flag there (missing when the flag does not exist in it). */
  byEnvironment: ReadonlyMap<string, Flag>
}

/** `#checkout #beta` in a description: the tags the filter offers. */
export function tagsOf(description: string | null | undefined): string[] {
  return [...(description ?? '').matchAll(/(?:^|\s)#([\w-]+)/g)].map((m) => (m[1] ?? '').toLowerCase())
}

/** The flags of a project, one row per key across the given environments, filtered and sorted by key. */
export function flagRows(
  flags: ReadonlyMap<string, ReadonlyMap<string, Flag>>,
  environmentIds: readonly string[],
  filter: FlagFilter,
): FlagRow[] {
  const rows = new Map<string, Map<string, Flag>>()
  for (const env of environmentIds) {
    for (const [key, flag] of flags.get(env) ?? []) {
      const row = rows.get(key) ?? new Map<string, Flag>()
      rows.set(key, row.set(env, flag))
    }
  }
  const search = filter.search.trim().toLowerCase()
  const tag = filter.tag.trim().toLowerCase().replace(/^#/, '')
  return [...rows]
    .map(([key, byEnvironment]) => ({ key, byEnvironment }))
    .filter(({ key, byEnvironment }) => {
      const any = [...byEnvironment.values()]
      if (
        search &&
        !key.toLowerCase().includes(search) &&
        !any.some((f) => f.description?.toLowerCase().includes(search))
      )
        return false
      if (filter.type !== 'all' && !any.some((f) => (f.flag_type ?? 'boolean') === filter.type)) return false
      if (tag && !any.some((f) => tagsOf(f.description).includes(tag))) return false
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
