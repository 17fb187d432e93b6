/** The console's view of flags, operations and sync status: pure functions, no DOM. */
import type { ClientFlag } from '@flagsync/flag-client'
import { compactRecord, type DeliveryError, type OutboxEntry, type SyncStatus } from '@flagsync/sync-client'

export type Operation = OutboxEntry['operation']

export const OPERATORS = ['equals', 'not_equals', 'contains', 'starts_with', 'ends_with'] as const
export type Operator = (typeof OPERATORS)[number]

export const OPERATOR_LABELS: Record<Operator, string> = {
  equals: 'is one of',
  not_equals: 'is not',
  contains: 'contains',
  starts_with: 'starts with',
  ends_with: 'ends with',
}

export interface Rule {
  attribute: string
  operator: Operator
  values: string[]
}

/** A flag of the flat API with every optional field filled in. */
export interface ConsoleFlag {
  key: string
  is_enabled: boolean
  rollout_percentage: number | null
  description: string | null
  rules: Rule[]
}

export const FLAG_KEY_PATTERN = /^[A-Za-z0-9_-]{1,100}$/

export function toConsoleFlag(flag: ClientFlag): ConsoleFlag {
  const rollout = flag.rollout_percentage
  const description = flag.description
  return {
    key: flag.key,
    is_enabled: flag.is_enabled === true,
    rollout_percentage: typeof rollout === 'number' ? rollout : null,
    description: typeof description === 'string' && description !== '' ? description : null,
    // Rebuilt with a fixed field order, so comparisons do not depend on how the server serialized them.
    rules: Array.isArray(flag.rules)
      ? flag.rules.filter(isRule).map((r) => ({ attribute: r.attribute, operator: r.operator, values: [...r.values] }))
      : [],
  }
}

function isRule(value: unknown): value is Rule {
  if (typeof value !== 'object' || value === null) return false
  const rule = value as Record<string, unknown>
  return (
    typeof rule.attribute === 'string' &&
    typeof rule.operator === 'string' &&
    (OPERATORS as readonly string[]).includes(rule.operator) &&
    Array.isArray(rule.values) &&
    rule.values.every((v) => typeof v === 'string')
  )
}

/** "beta, internal ,  staff" → ['beta', 'internal', 'staff'] */
export function parseValues(text: string): string[] {
  return text
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '')
}

/** The fields of `next` that differ from `current`, as a merge patch. */
export function diffFlag(current: ConsoleFlag, next: ConsoleFlag): Partial<ConsoleFlag> {
  const changes: Partial<ConsoleFlag> = {}
  if (next.is_enabled !== current.is_enabled) changes.is_enabled = next.is_enabled
  if (next.rollout_percentage !== current.rollout_percentage) changes.rollout_percentage = next.rollout_percentage
  if (next.description !== current.description) changes.description = next.description
  if (JSON.stringify(next.rules) !== JSON.stringify(current.rules)) changes.rules = next.rules
  return changes
}

export function rolloutLabel(flag: ConsoleFlag): string {
  const pct = flag.rollout_percentage ?? 100
  return pct === 100 ? 'All users' : `${pct}% of users`
}

export function ruleSummary(rule: Rule): string {
  return `${rule.attribute} ${OPERATOR_LABELS[rule.operator]} ${rule.values.join(', ')}`
}

// ---- operations --------------------------------------------------------------

const FIELD_NAMES: Record<string, string> = {
  is_enabled: 'state',
  rollout_percentage: 'rollout',
  description: 'description',
  rules: 'rules',
}

/** A short human description of a queued operation: `Create “beta”`, `Turn on “dark-mode”`. */
export function describeOperation(op: Operation): string {
  const name = `“${op.recordId}”`
  if (op.collection !== 'flags') return `${op.action} ${op.collection}/${op.recordId}`
  switch (op.action) {
    case 'insert':
      return `Create ${name}`
    case 'delete':
      return `Delete ${name}`
    case 'update': {
      const fields = Object.keys(op.changes)
      if (fields.length === 1 && fields[0] === 'is_enabled') {
        return `${op.changes.is_enabled === true ? 'Turn on' : 'Turn off'} ${name}`
      }
      const names = fields.map((f) => FIELD_NAMES[f] ?? f)
      return `Edit ${names.join(', ')} of ${name}`
    }
  }
}

export interface SentOperation {
  /** The operation as the receiver saw it (after compaction). */
  operation: Operation
  /** The outbox ids it stands for: discard these to drop it. */
  ids: number[]
}

/**
 * The operations of the batch the receiver rejected. The sync client names the
 * queued operations behind the one the receiver's `operationIndex` points at
 * (`lastError.outboxIds`); without an index, every operation of the batch is a
 * suspect, one per record.
 */
export function rejectedOperations(entries: readonly OutboxEntry[], error: DeliveryError): SentOperation[] {
  const named = error.outboxIds ? new Set(error.outboxIds) : undefined
  const groups = new Map<string, OutboxEntry[]>()
  for (const entry of entries) {
    if (entry.batchId !== error.batchId || (named && !named.has(entry.id))) continue
    const key = JSON.stringify([entry.operation.collection, entry.operation.recordId])
    const group = groups.get(key)
    if (group) group.push(entry)
    else groups.set(key, [entry])
  }
  const sent: SentOperation[] = []
  for (const group of groups.values()) {
    const ops = group.map((e) => e.operation)
    // An insert…delete pair is sent as a delete when the server may know the record: show it as one.
    const operation = compactRecord(ops) ?? compactRecord(ops, true)
    if (operation) sent.push({ operation, ids: group.map((e) => e.id) })
  }
  return sent
}

/** The keys of flags with queued, unacknowledged operations. */
export function pendingKeys(entries: readonly OutboxEntry[]): Set<string> {
  return new Set(entries.filter((e) => e.operation.collection === 'flags').map((e) => e.operation.recordId))
}

// ---- status ------------------------------------------------------------------

export type Tone = 'ok' | 'pending' | 'busy' | 'offline' | 'warn' | 'error'

export interface StatusView {
  tone: Tone
  /** The pill's text. */
  label: string
}

function formatWait(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000))
  if (s < 60) return `${s} s`
  const m = Math.floor(s / 60)
  const rest = s % 60
  return rest === 0 ? `${m} min` : `${m} min ${rest} s`
}

export function pendingLabel(pending: number): string {
  return pending === 1 ? '1 pending' : `${pending} pending`
}

/** The server answers 401: to the key saved in this browser (`rejected`), or to no key at all (`needed`). */
export type KeyProblem = 'rejected' | 'needed' | null

/**
 * What the header pill says for a sync status at time `now`. With a key
 * problem nothing is synced whatever the outbox says (an empty outbox is not
 * "All changes synced").
 */
export function describeStatus(status: SyncStatus, now: number, key: KeyProblem = null): StatusView {
  if (key !== null && status.state !== 'offline') {
    const what = key === 'rejected' ? 'Key rejected' : 'Key needed'
    return {
      tone: 'error',
      label: status.pending > 0 ? `${what} — ${pendingLabel(status.pending)}` : `${what} — not connected`,
    }
  }
  switch (status.state) {
    case 'offline':
      return {
        tone: 'offline',
        label: status.pending > 0 ? `Offline — ${pendingLabel(status.pending)}` : 'Offline — all changes saved',
      }
    case 'blocked':
      return { tone: 'error', label: `Blocked: ${status.lastError?.message ?? 'the receiver rejected a change'}` }
    case 'syncing':
      return { tone: 'busy', label: 'Syncing…' }
    case 'backoff':
      return {
        tone: 'warn',
        label:
          status.nextAttemptAt === null || status.nextAttemptAt <= now
            ? 'Retrying…'
            : `Retrying in ${formatWait(status.nextAttemptAt - now)}`,
      }
    case 'idle':
      if (status.conflicts > 0) {
        // Not "All changes synced": an edit is waiting for the editor's decision.
        const label =
          status.conflicts === 1 ? '1 change needs your decision' : `${status.conflicts} changes need your decision`
        return { tone: 'warn', label }
      }
      return status.pending > 0
        ? { tone: 'pending', label: pendingLabel(status.pending) }
        : { tone: 'ok', label: 'All changes synced' }
  }
}
