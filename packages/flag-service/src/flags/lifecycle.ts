import { HttpError } from '@flagsync/server-kit'
import { TABLES } from '@flagsync/store'
import type { Knex } from 'knex'
import { lastEvaluatedByKey } from '../impressions/stats.js'
import { emptyMeta, type FlagMeta, flagMeta, projectMeta, TAG_MESSAGE, TAG_PATTERN } from './meta.js'
import type { ServiceFlag } from './model.js'
import type { StoredFlag } from './queries.js'
import { type Stale, staleOf } from './stale.js'

/** What every flag read of the service carries beside the flag: its metadata and its lifecycle. */
export interface Lifecycle {
  tags: string[]
  owner: number | null
  last_changed_at: string
  last_evaluated_at: string | null
  stale: Stale
}

/** `?tag=…&tag=…` (every tag must be on the flag), `?stale=true`, `?archived=true`. */
export interface FlagListQuery {
  tags: string[]
  stale: boolean
  archived: boolean
}

interface Times {
  lastChangedAt: number
  createdAt: number
}

/** The environment, the project, the clock and `STALE_AFTER_DAYS`: what a lifecycle read needs. */
export interface LifecycleScope {
  environmentId: string
  projectId: string
  now: number
  staleAfterDays: number
}

/** Each flag's last change and first write in the environment (ms), from the change log. */
async function flagTimes(knex: Knex, environmentId: string, key?: string): Promise<Map<string, Times>> {
  const changed = knex({ f: TABLES.flags })
    .join({ c: TABLES.changes }, 'c.revision', 'f.revision')
    .where('f.scope', environmentId)
    .select('f.key', 'c.created_at')
  const created = knex(TABLES.changes)
    .where('scope', environmentId)
    .groupBy('key')
    .select('key')
    .min({ at: 'created_at' })
  if (key !== undefined) {
    changed.where('f.key', key)
    created.where('key', key)
  }
  const [lastRows, firstRows] = (await Promise.all([changed, created])) as [
    Array<{ key: string; created_at: number | string }>,
    Array<{ key: string; at: number | string }>,
  ]
  const first = new Map(firstRows.map((r) => [r.key, Number(r.at)]))
  return new Map(
    lastRows.map((r) => [
      r.key,
      { lastChangedAt: Number(r.created_at), createdAt: first.get(r.key) ?? Number(r.created_at) },
    ]),
  )
}

function lifecycleOf(
  flag: ServiceFlag,
  meta: FlagMeta,
  times: Times | undefined,
  lastEvaluatedAt: number | null,
  scope: LifecycleScope,
): Lifecycle {
  const lastChangedAt = times?.lastChangedAt ?? scope.now
  const stale = staleOf({
    flag,
    lastChangedAt,
    createdAt: times?.createdAt ?? lastChangedAt,
    lastEvaluatedAt,
    now: scope.now,
    afterDays: scope.staleAfterDays,
  })
  return {
    tags: meta.tags,
    owner: meta.owner,
    last_changed_at: new Date(lastChangedAt).toISOString(),
    last_evaluated_at: lastEvaluatedAt === null ? null : new Date(lastEvaluatedAt).toISOString(),
    stale,
  }
}

/**
 * A flag as a read answers it: the stored JSON as stored (a flag always has its `key`, so it is never `{}`), then
 * `revision`, then its metadata and lifecycle.
 */
function readJson(data: string, revision: number, lifecycle: Lifecycle): string {
  return `${data.slice(0, -1)},${JSON.stringify({ revision, ...lifecycle }).slice(1)}`
}

/** The environment's live flags with their lifecycle, filtered by the query (tags and stale). */
export async function listLive(
  knex: Knex,
  rows: StoredFlag[],
  scope: LifecycleScope,
  query: FlagListQuery,
): Promise<string[]> {
  const [meta, times, evaluated] = await Promise.all([
    projectMeta(knex, scope.projectId),
    flagTimes(knex, scope.environmentId),
    lastEvaluatedByKey(knex, scope.environmentId),
  ])
  const out: string[] = []
  for (const row of rows) {
    const flag = JSON.parse(row.data) as ServiceFlag
    const m = meta.get(flag.key) ?? emptyMeta(flag.key)
    if (!query.tags.every((t) => m.tags.includes(t))) continue
    const lifecycle = lifecycleOf(flag, m, times.get(flag.key), evaluated.get(flag.key) ?? null, scope)
    if (query.stale && lifecycle.stale === null) continue
    out.push(readJson(row.data, Number(row.revision), lifecycle))
  }
  return out
}

/** One live flag with its lifecycle. */
export async function readLive(knex: Knex, row: StoredFlag, scope: LifecycleScope): Promise<string> {
  const flag = JSON.parse(row.data) as ServiceFlag
  const [meta, times, evaluated] = await Promise.all([
    flagMeta(knex, scope.projectId, flag.key),
    flagTimes(knex, scope.environmentId, flag.key),
    lastEvaluatedByKey(knex, scope.environmentId, flag.key),
  ])
  return readJson(
    row.data,
    Number(row.revision),
    lifecycleOf(flag, meta, times.get(flag.key), evaluated.get(flag.key) ?? null, scope),
  )
}

/**
 * The project's archived flags that were in this environment, as they were there, each with its tags, owner and
 * `archived: {at, by}`; filtered by the query's tags.
 */
export async function listArchived(knex: Knex, scope: LifecycleScope, query: FlagListQuery): Promise<string[]> {
  const meta = [...(await projectMeta(knex, scope.projectId)).values()].sort((a, b) => (a.key < b.key ? -1 : 1))
  const out: string[] = []
  for (const m of meta) {
    const flag = m.archived?.flags[scope.environmentId]
    if (!m.archived || !flag) continue
    if (!query.tags.every((t) => m.tags.includes(t))) continue
    const archived = { at: m.archived.at, by: m.archived.by }
    out.push(JSON.stringify({ ...flag, tags: m.tags, owner: m.owner, archived }))
  }
  return out
}

/** The list's parameters: another (`?stale[]=true`, `?tags=a`) is a 422 naming it, not a list that ignores it. */
const LIST_PARAMETERS = new Set(['tag', 'stale', 'archived'])

/**
 * Reads the list query; a value other than `true`/`false`, a malformed tag, or a parameter the list does not read
 * is a 422 naming the parameter.
 */
export function flagListQueryOf(query: Record<string, unknown>): FlagListQuery {
  const unknown = Object.keys(query).find((name) => !LIST_PARAMETERS.has(name))
  if (unknown !== undefined) throw badQuery(unknown, 'unknown parameter: send tag, stale or archived')
  const raw = query.tag === undefined ? [] : Array.isArray(query.tag) ? query.tag : [query.tag]
  const tags = raw.map((t) => (typeof t === 'string' ? t.trim().toLowerCase() : ''))
  if (tags.some((t) => !TAG_PATTERN.test(t))) throw badQuery('tag', TAG_MESSAGE)
  return { tags, stale: booleanOf(query.stale, 'stale'), archived: booleanOf(query.archived, 'archived') }
}

function booleanOf(value: unknown, name: string): boolean {
  if (value === undefined || value === 'false') return false
  if (value === 'true') return true
  throw badQuery(name, 'must be true or false')
}

const badQuery = (path: string, message: string) =>
  new HttpError('validation_failed', `invalid query: ${path}: ${message}`, { issues: [{ path, message }] })
