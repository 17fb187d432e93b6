import { type ServiceAuditEntryWire, withoutBidiControls } from '@flagsync/protocol'
import { patchDiff } from './diff.js'
import type { Flag } from './types.js'

type Entry = ServiceAuditEntryWire

/** How a sentence names people and environments: display names where known, else what the trail holds. */
export interface HistoryNames {
  /** A person's display name from their email (`ann@example.com` → `Ann`). */
  person?: (email: string) => string | undefined
  /** An environment's name from its id; without it (or an id it does not know) the sentence names none. */
  environment?: (id: string) => string | undefined
  /** A user's display name from their id (a flag's `owner`). */
  user?: (id: number) => string | undefined
}

/** Values longer than this are "changed", not quoted. */
const MAX_VALUE = 40
const TOKEN_SUFFIX = / \(token .*\)$/s

/** A person as the sentence names them: the display name, keeping which token they used. */
function personOf(name: string | undefined, names: HistoryNames): string {
  if (name === undefined) return 'Someone'
  const email = name.replace(TOKEN_SUFFIX, '')
  const shown = names.person?.(email) ?? email
  return email === name ? shown : `${shown}${name.slice(email.length)}`
}

const code = (key: string) => `\`${key}\``
const labelOf = (field: string) => (field === 'rollout_percentage' ? 'rollout' : field.replaceAll('_', ' '))

/**
 * One changed field as a phrase; `subject` names the flag in the first phrase of a sentence (`turned
 * \`checkout\` on`) and is left out of the ones after it (`set rollout to 25 %`).
 */
function fieldPhrase(field: string, before: string, after: string, subject: string | null): string {
  const of = subject ? ` of ${subject}` : ''
  if (field === 'is_enabled' && (after === 'true' || after === 'false')) {
    return `turned ${subject ?? 'it'} ${after === 'true' ? 'on' : 'off'}`
  }
  if (field === 'rollout_percentage' && /^\d+(\.\d+)?$/.test(after)) return `set rollout${of} to ${after} %`
  if (after === '(not set)' || after === '(removed)') return `removed the ${labelOf(field)}${of}`
  const simple = after.length <= MAX_VALUE && !after.startsWith('[') && !after.startsWith('{')
  if (simple && before !== after) return `set the ${labelOf(field)}${of} to ${after}`
  return `changed the ${labelOf(field)}${of}`
}

const joined = (parts: string[]) =>
  parts.length <= 1 ? (parts[0] ?? '') : `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}`

/**
 * What an entry did to its flag or segment: `created \`checkout\``, `deleted \`old-banner\``, `turned
 * \`checkout\` on and set rollout to 25 %` (field by field, the way a change request's diff reads).
 */
export function changePhrase(
  entry: Pick<Entry, 'action' | 'key' | 'collection' | 'before' | 'after' | 'changedFields'>,
) {
  const subject = entry.collection === 'segments' ? `segment ${code(entry.key)}` : code(entry.key)
  if (entry.action === 'create') return `created ${subject}`
  if (entry.action === 'delete') return `deleted ${subject}`
  const patch = Object.fromEntries(entry.changedFields.map((f) => [f, entry.after?.[f] ?? null]))
  const rows = patchDiff((entry.before ?? undefined) as Flag | undefined, patch)
  if (rows.length === 0) return `changed ${subject}`
  // The switch and the rollout lead: they are what a reader of a flag's history looks for first.
  const rank = (field: string) => (field === 'is_enabled' ? 0 : field === 'rollout_percentage' ? 1 : 2)
  rows.sort((a, b) => rank(a.field) - rank(b.field))
  return joined(rows.map((row, i) => fieldPhrase(row.field, row.before, row.after, i === 0 ? subject : null)))
}

/** An entry of a flag's project-level record: a flag's entry in no environment (a segment's is not a flag's). */
export const isFlagMeta = (entry: Pick<Entry, 'collection' | 'environment_id'>) =>
  entry.collection === 'flags' && entry.environment_id === null

/** A flag's project-level record (`meta:<project>`): its tags, owner and archive, in no environment. */
interface FlagMeta {
  tags?: string[]
  owner?: number | null
  archived?: unknown
}

/**
 * What an entry of a flag's project-level record did: `archived \`old-banner\``, `restored …`, `tagged \`checkout\`
 * payments, web and made Dan its owner`. The record is created, updated and deleted as tags, owner and archive
 * change, so its action alone would read "created \`checkout\`" for a tag. Null for any other entry.
 */
function metaPhrase(entry: Entry, names: HistoryNames): string | null {
  if (!isFlagMeta(entry)) return null
  const before = (entry.before ?? {}) as FlagMeta
  const after = (entry.after ?? {}) as FlagMeta
  const subject = code(entry.key)
  if (after.archived && !before.archived) return `archived ${subject}`
  if (before.archived && !after.archived) return `restored ${subject}`
  const parts: string[] = []
  const tags = after.tags ?? []
  if (JSON.stringify(before.tags ?? []) !== JSON.stringify(tags)) {
    parts.push(tags.length > 0 ? `tagged ${subject} ${tags.join(', ')}` : `removed the tags of ${subject}`)
  }
  const owner = after.owner ?? null
  if ((before.owner ?? null) !== owner) {
    const of = parts.length > 0 ? 'its owner' : `the owner of ${subject}`
    parts.push(owner === null ? `removed ${of}` : `made ${names.user?.(owner) ?? `user #${owner}`} ${of}`)
  }
  return parts.length > 0 ? joined(parts) : `changed ${subject}`
}

/** `promote from Staging` (the service's promotion) or a promote route: the environment it came from, if named. */
function promotedFrom(entry: Entry): string | null | undefined {
  const source = entry.source
  if (source?.type === 'other') return /^promote from (.+)$/s.exec(source.name)?.[1] ?? undefined
  if (source?.type === 'api' && /\/promote$/.test(source.route)) return null
  return undefined
}

/**
 * An entry as one sentence a team lead reads, e.g. `Dan approved change request #2 by Ann: turned \`checkout\` on
 * in Production`, `Scheduled change #5 by Ann (approved by Dan) set rollout of \`checkout\` to 25 % in
 * Production`, `Ann promoted \`beta\` from Staging to Production`, `Ann deleted \`old-banner\` in Production`,
 * `Ann turned \`checkout\` off in Staging, synced from an offline editor (batch 1a2b3c4d…)`. Bidirectional controls
 * in the names and values it quotes are left out, so none can reorder the sentence around them.
 */
export function sentenceOf(entry: Entry, names: HistoryNames = {}): string {
  return withoutBidiControls(composeSentence(entry, names))
}

function composeSentence(entry: Entry, names: HistoryNames): string {
  const who = personOf(entry.actor?.name, names)
  const what = metaPhrase(entry, names) ?? changePhrase(entry)
  // Never an id: an environment the reader cannot name (the view is of one environment) goes unsaid.
  const envName = entry.environment_id === null ? null : (names.environment?.(entry.environment_id) ?? null)
  const where = envName === null ? '' : ` in ${envName}`
  const source = entry.source
  switch (source?.type) {
    case 'change_request': {
      const by = source.requestedBy ? ` by ${personOf(source.requestedBy.name, names)}` : ''
      return `${who} approved change request #${source.id}${by}: ${what}${where}`
    }
    case 'schedule': {
      const approval = source.approvedBy ? ` (approved by ${personOf(source.approvedBy.name, names)})` : ''
      return `Scheduled change #${source.id} by ${personOf(source.createdBy.name, names)}${approval} ${what}${where}`
    }
    case 'sync':
      return `${who} ${what}${where}, synced from an offline editor (batch ${source.batchId.slice(0, 8)}…)`
    default: {
      const from = promotedFrom(entry)
      if (from === undefined) return `${who} ${what}${where}`
      const origin = from === null ? '' : ` from ${from}`
      return `${who} promoted ${code(entry.key)}${origin}${envName === null ? '' : ` to ${envName}`}`
    }
  }
}
