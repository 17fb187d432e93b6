import { type AuditContext, type FlagChange, TABLES } from '@flagsync/store'
import type { Knex } from 'knex'
import { isSegmentScope, projectOfSegmentScope } from '../flags/expand.js'
import { SERVICE_TABLES } from '../tables.js'
import { emitWebhookEvents, type WebhookEvent } from './emit.js'
import { WEBHOOK_TABLES } from './tables.js'

interface EnvironmentRef {
  id: string
  name: string
  project_id: string
}

const CHUNK = 500

/**
 * The flag store's in-transaction hook (`FlagStoreOptions.beforeCommit`): turns
 * the write's committed-to-be flag changes into outbox rows, so every path that
 * writes flags (REST, /sync, approvals, promotion) emits `flag.created`,
 * `flag.updated` and `flag.deleted`, and segment edits (stored as flags under
 * `seg:<project>`) emit `segment.updated`, in the same transaction. A write to
 * projects without an enabled webhook costs one query.
 */
export async function recordFlagEvents(
  trx: Knex.Transaction,
  changes: readonly FlagChange[],
  audit: AuditContext | undefined,
  now: number,
): Promise<void> {
  if (changes.length === 0) return
  const scopes = [...new Set(changes.map((c) => c.scope))]
  const environments = await watchedEnvironments(
    trx,
    scopes.filter((s) => !isSegmentScope(s)),
  )
  const segmentProjects = await watchedProjects(trx, scopes.filter(isSegmentScope).map(projectOfSegmentScope))
  const relevant = changes.filter((c) =>
    isSegmentScope(c.scope) ? segmentProjects.has(projectOfSegmentScope(c.scope)) : environments.has(c.scope),
  )
  if (relevant.length === 0) return
  const before = await statesBefore(
    trx,
    relevant.map((c) => c.revision),
  )
  const events = relevant.map((c): WebhookEvent => {
    const prior = before.get(c.revision) ?? null
    // A change with its own audit context (a scheduled change applied with others) names its own author.
    const who = c.audit ?? audit
    const actor = who?.actor ?? who?.declaredActor ?? null
    const common = { actor, source: who?.source ?? null, before: prior, after: c.flag, revision: c.revision }
    if (isSegmentScope(c.scope)) {
      const projectId = projectOfSegmentScope(c.scope)
      const action = c.flag === null ? 'deleted' : prior === null ? 'created' : 'updated'
      return {
        type: 'segment.updated',
        projectId,
        data: { project_id: projectId, segment_key: c.key, action, ...common },
      }
    }
    const env = environments.get(c.scope) as EnvironmentRef
    const type = c.flag === null ? 'flag.deleted' : prior === null ? 'flag.created' : 'flag.updated'
    const data = {
      project_id: env.project_id,
      environment: { id: env.id, name: env.name },
      flag_key: c.key,
      ...common,
    }
    return { type, projectId: env.project_id, data }
  })
  await emitWebhookEvents(trx, events, { now })
}

/** The environments among `ids` whose project has an enabled webhook. */
async function watchedEnvironments(trx: Knex, ids: string[]): Promise<Map<string, EnvironmentRef>> {
  const out = new Map<string, EnvironmentRef>()
  for (let i = 0; i < ids.length; i += CHUNK) {
    const rows = (await trx({ e: SERVICE_TABLES.environments })
      .whereIn('e.id', ids.slice(i, i + CHUNK))
      .whereExists((q) => {
        q.select(trx.raw('1'))
          .from({ w: WEBHOOK_TABLES.webhooks })
          .whereRaw('w.project_id = e.project_id')
          .andWhere('w.enabled', true)
      })
      .select('e.id', 'e.name', 'e.project_id')) as EnvironmentRef[]
    for (const row of rows) out.set(row.id, row)
  }
  return out
}

/** The projects among `ids` with an enabled webhook. */
async function watchedProjects(trx: Knex, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const rows = (await trx(WEBHOOK_TABLES.webhooks)
    .whereIn('project_id', ids)
    .andWhere('enabled', true)
    .distinct('project_id')) as Array<{ project_id: string }>
  return new Set(rows.map((r) => r.project_id))
}

/**
 * Each change's record as it was before the write: the change-log row its
 * `prev_revision` points at (the record's head when the write began; none for
 * a record that did not exist). The head row is never pruned, so it is there.
 */
async function statesBefore(trx: Knex, revisions: number[]): Promise<Map<number, unknown>> {
  const out = new Map<number, unknown>()
  for (let i = 0; i < revisions.length; i += CHUNK) {
    const rows = (await trx({ c: TABLES.changes })
      .leftJoin({ p: TABLES.changes }, 'p.revision', 'c.prev_revision')
      .whereIn('c.revision', revisions.slice(i, i + CHUNK))
      .select('c.revision', 'p.data')) as Array<{ revision: number | string; data: string | null }>
    for (const row of rows) if (row.data !== null) out.set(Number(row.revision), JSON.parse(row.data))
  }
  return out
}
