import type { AuditPageQuery } from '@flagsync/server-kit'
import type { Knex } from 'knex'
import { iso, type Num } from '../records.js'
import { SERVICE_TABLES } from '../tables.js'

const T = SERVICE_TABLES

/** What the people audit log records; details never hold a password or its hash. */
export type PeopleAction =
  | 'user.created'
  | 'user.updated'
  | 'user.password_reset'
  | 'user.password_changed'
  | 'user.deleted'

export interface PeopleAuditInput {
  at: number
  actor: number
  action: PeopleAction
  targetUserId: number
  details: Record<string, unknown>
}

interface PeopleAuditRow {
  id: Num
  at: Num
  actor: Num
  action: PeopleAction
  target_user_id: Num
  details: string
}

export interface PeopleAuditJson {
  id: number
  at: string
  actor: number
  action: PeopleAction
  target_user_id: number
  details: Record<string, unknown>
}

/** Appends one entry; call it in the transaction of the change it records. */
export async function recordPeopleAudit(trx: Knex, entry: PeopleAuditInput): Promise<void> {
  await trx(T.peopleAudit).insert({
    at: entry.at,
    actor: entry.actor,
    action: entry.action,
    target_user_id: entry.targetUserId,
    details: JSON.stringify(entry.details),
  })
}

const entryJson = (row: PeopleAuditRow): PeopleAuditJson => ({
  id: Number(row.id),
  at: iso(row.at),
  actor: Number(row.actor),
  action: row.action,
  target_user_id: Number(row.target_user_id),
  details: JSON.parse(row.details) as Record<string, unknown>,
})

/**
 * One page, newest first, in the shape of every audit route: `nextCursor` (a string, null on the last page) asks
 * for the next, older page; `since` keeps only entries above an id.
 */
export async function peopleAuditPage(
  knex: Knex,
  query: AuditPageQuery,
): Promise<{ entries: PeopleAuditJson[]; nextCursor: string | null }> {
  const q = knex(T.peopleAudit).select('id', 'at', 'actor', 'action', 'target_user_id', 'details')
  if (query.since !== undefined) q.where('id', '>', query.since)
  if (query.cursor !== undefined) q.where('id', '<', query.cursor)
  const rows = (await q.orderBy('id', 'desc').limit(query.limit + 1)) as PeopleAuditRow[]
  const page = rows.slice(0, query.limit)
  const last = page.at(-1)
  return {
    entries: page.map(entryJson),
    nextCursor: rows.length > query.limit && last ? String(last.id) : null,
  }
}
