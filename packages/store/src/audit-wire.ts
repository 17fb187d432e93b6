import type { AuditEntryWire, AuditPageWire } from '@flagsync/protocol'
import type { AuditEntry, AuditPage } from './audit-log.js'

/**
 * An audit entry as the audit routes send it (`auditEntrySchema`): the time as
 * ISO 8601, actors marked verified or declared, the source parsed from what
 * the writer recorded (`sync` batch, `api:<route>`, `change-request:<id>`,
 * `schedule:<id>` or `schedule:<id> approved by <name>`).
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
  const schedule = SCHEDULE_SOURCE.exec(source)
  if (schedule && entry.actor !== null) {
    const approver = schedule[2]
    return {
      type: 'schedule',
      id: Number(schedule[1]),
      createdBy: { name: entry.actor, verified: true },
      ...(approver === undefined ? {} : { approvedBy: { name: approver, verified: true } }),
    }
  }
  return { type: 'other', name: source }
}

/**
 * A scheduled change's source: its schedule and, where someone approved it, the approver as named at approval
 * (the creator is the entry's actor). A source listing several ids (`schedule:12,13`) names no one schedule.
 */
const SCHEDULE_SOURCE = /^schedule:(\d+)(?: approved by (.+))?$/s
