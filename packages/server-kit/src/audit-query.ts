import { AUDIT_PAGE_SIZE, auditQuerySchema } from '@flagsync/protocol'
import { parseOr422 } from './validate.js'

/** An audit route's page query, as the store reads it. */
export interface AuditPageQuery {
  /** Only entries with a revision above this one. */
  since?: number
  /** Only entries with a revision below this one (the previous page's `nextCursor`). */
  cursor?: number
  limit: number
}

/**
 * The `?since=&cursor=&limit=` of every audit route (`auditQuerySchema`): any
 * other parameter, a repeated one or a bad number is a 422 naming it; a page
 * holds `AUDIT_PAGE_SIZE` (100) entries unless `limit` (1 to 1000) says.
 */
export function auditQueryOf(query: unknown): AuditPageQuery {
  const q = parseOr422(auditQuerySchema, query, 'query')
  return { since: q.since, cursor: q.cursor, limit: q.limit ?? AUDIT_PAGE_SIZE }
}
