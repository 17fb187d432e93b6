/** Conflicts and the audit trail in words an editor uses: which flag, which field, who, when. Pure. */
import type { Conflict } from '@flagsync/sync-client'

/** One entry of `GET /api/flags/:key/history` (the fields the console reads). */
export interface HistoryEntry {
  revision: number
  time: string
  key: string
  action: 'create' | 'update' | 'delete'
  before: Record<string, unknown> | null
  after: Record<string, unknown> | null
  changedFields: string[]
  actor: { name: string } | null
  /** What the device said in `X-Flagsync-Actor`: recorded as sent, `verified: false`. */
  declaredActor: { name: string; verified?: boolean } | null
  source: { type: 'api'; route: string } | { type: 'sync'; batchId: string } | { type: 'other'; name: string } | null
}

const FIELD_LABELS: Record<string, string> = {
  is_enabled: 'On/off',
  rollout_percentage: 'Rollout',
  description: 'Description',
  rules: 'Targeting rules',
  key: 'Key',
}

export function fieldLabel(field: string): string {
  return FIELD_LABELS[field] ?? field
}

/** A field's value as the row shows it. */
export function formatValue(field: string, value: unknown): string {
  if (value === undefined) return '—'
  if (field === 'is_enabled') return value === true ? 'On' : 'Off'
  if (field === 'rollout_percentage') return value === null ? 'Everyone' : `${String(value)}%`
  if (field === 'description') return value === null || value === '' ? 'No description' : String(value)
  if (field === 'rules' && Array.isArray(value)) {
    return value.length === 0 ? 'No rules' : value.length === 1 ? '1 rule' : `${value.length} rules`
  }
  return JSON.stringify(value)
}

/** The name the audit trail gives the person behind a change. */
export function personOf(entry: Pick<HistoryEntry, 'actor' | 'declaredActor'>): string {
  const declared = entry.declaredActor?.name
  if (declared) {
    try {
      // The sync client percent-encodes the name it sends (header values are Latin-1).
      return decodeURIComponent(declared)
    } catch {
      return declared
    }
  }
  return 'Someone'
}

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' })

function formatTime(iso: string | number): string {
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? String(iso) : timeFormat.format(date)
}

/** Who made the change the conflict is about, and when: the newest change after what the editor saw. */
export function whoChanged(
  conflict: Pick<Conflict, 'mine'>,
  history: readonly HistoryEntry[],
): { who: string; when: string } | null {
  const base = conflict.mine.baseRevision ?? -1
  const entry = history.find((e) => e.revision > base)
  return entry ? { who: personOf(entry), when: formatTime(entry.time) } : null
}

/** The conflict's one-line story. */
export function conflictTitle(conflict: Pick<Conflict, 'kind' | 'recordId'>, by: { who: string; when: string } | null) {
  const who = by?.who ?? 'Someone'
  const when = by ? ` on ${by.when}` : ''
  if (conflict.kind === 'deleted') return `${who} deleted “${conflict.recordId}”${when} while you were changing it`
  if (conflict.kind === 'exists') return `${who} also created “${conflict.recordId}”${when}`
  return `${who} changed “${conflict.recordId}”${when} while you were changing it`
}

export interface ConflictField {
  field: string
  label: string
  base: string
  mine: string
  theirs: string
}

/** My fields of the conflicting edit: the changes of an update, the record of an insert. */
export function myFields(conflict: Pick<Conflict, 'mine'>): Record<string, unknown> {
  const { mine } = conflict
  if (mine.action === 'update') return mine.changes
  if (mine.action === 'insert') return mine.record
  return {}
}

/** Base / mine / theirs, field by field: the fields both changed first, then my other fields. */
export function conflictFields(conflict: Pick<Conflict, 'mine' | 'fields' | 'base' | 'current'>): ConflictField[] {
  const mine = myFields(conflict)
  const deleting = conflict.mine.action === 'delete'
  const fields = [...new Set([...conflict.fields, ...Object.keys(mine)])].filter((f) => f !== 'key')
  return fields.map((field) => ({
    field,
    label: fieldLabel(field),
    base: formatValue(field, conflict.base?.[field]),
    mine: deleting ? 'Deleted' : field in mine ? formatValue(field, mine[field]) : 'Unchanged',
    theirs: conflict.current === null ? 'Deleted' : formatValue(field, conflict.current[field]),
  }))
}

/** What a discard loses, said plainly (asked before discarding). */
export function discardMessage(label: string): string {
  return `“${label}” will not be sent to the server and cannot be recovered. Your other changes stay.`
}

/** How the drawer marks a name the device declared: the server records it as sent and never checks it. */
export const DECLARED_MARK = '(declared by the device)'

/** Whether the entry's name is one the device declared rather than one the server verified. */
function isDeclared(entry: Pick<HistoryEntry, 'declaredActor'>): boolean {
  return entry.declaredActor !== null && entry.declaredActor.verified !== true
}

/**
 * One history entry as the drawer lists it; `declared` says the name is the
 * device's own claim (`verified: false`), shown with {@link DECLARED_MARK}.
 */
export function describeEntry(entry: HistoryEntry): {
  who: string
  declared: boolean
  when: string
  what: string[]
  from: string
} {
  const what =
    entry.action === 'create'
      ? ['Created the flag']
      : entry.action === 'delete'
        ? ['Deleted the flag']
        : entry.changedFields.map(
            (f) => `${fieldLabel(f)}: ${formatValue(f, entry.before?.[f])} → ${formatValue(f, entry.after?.[f])}`,
          )
  const source = entry.source
  const from =
    source?.type === 'sync'
      ? `from a device (change set ${source.batchId.slice(0, 8)})`
      : source?.type === 'api'
        ? 'through the server’s API'
        : 'on the server'
  return { who: personOf(entry), declared: isDeclared(entry), when: formatTime(entry.time), what, from }
}
