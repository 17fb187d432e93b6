import type { AuditEntryWire, AuditPageWire } from '@flagsync/protocol'
import type { AuditEntry, AuditPage } from './audit-log.js'

/**
 * An audit entry as the audit routes send it (`auditEntrySchema`): the time as
 * ISO 8601, actors marked verified or declared, the source parsed from what
 * the writer recorded (`sync` batch, `api:<route>`, `change-request:<id>`).
 */
export function auditEntryToWire(entry: AuditEntry): AuditEntryWire {
  return {
    revision: entry.revision,
    time: new Date(entry.time).toISOString(),
    key: entry.key,
    action: entry.action,
    before: entry.before,
    beforeKnown: entry.beforeKnown,
    after: entry.after,
    changedFields: entry.changedFields,
    actor: entry.actor === null ? null : { name: entry.actor, verified: true },
    declaredActor: entry.declaredActor === null ? null : { name: entry.declaredActor, verified: false },
    source: sourceOf(entry),
  }
}

/** A page as the audit routes send it; `toWire` maps each entry (e.g. to add fields of its own). */
export function auditPageToWire<T = AuditEntryWire>(
  page: AuditPage,
  toWire: (entry: AuditEntry) => T = auditEntryToWire as (entry: AuditEntry) => T,
): Omit<AuditPageWire, 'entries'> & { entries: T[] } {
  return {
    entries: page.entries.map(toWire),
    nextCursor: page.nextCursor === null ? null : String(page.nextCursor),
  }
}

function sourceOf(entry: AuditEntry): AuditEntryWire['source'] {
  if (entry.batchId !== null) {
    return { type: 'sync', batchId: entry.batchId, operationIndex: entry.operationIndex ?? 0 }
  }
  const source = entry.source
  if (source === null) return null
  if (source.startsWith('api:')) return { type: 'api', route: source.slice('api:'.length) }
  const request = /^change-request:(\d+)$/.exec(source)
  if (request) return { type: 'change_request', id: Number(request[1]) }
  return { type: 'other', name: source }
}
