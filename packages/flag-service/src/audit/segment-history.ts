import type { AuditPageQuery } from '@flagsync/server-kit'
import type { AuditEntry, AuditLog, AuditPage, StoredFlag } from '@flagsync/store'
import { segmentKeysOf, segmentScope } from '../flags/expand.js'

/** How many segment change rows one read of the log takes while looking for those a flag used. */
const SEGMENT_SCAN = 200

/**
 * A flag's history with the changes of the segments it used: a segment change
 * at revision R is listed when the flag's rules, as they read just before R,
 * referenced that segment. Derived at read time from the change log (the
 * segment's row and the flag's own rows); nothing is written to the flag.
 * Pages are cut by revision like any audit page, so `cursor` and `since`
 * apply to both kinds of entry.
 */
export async function flagHistoryWithSegments(
  audit: AuditLog,
  environment: { id: string; projectId: string },
  key: string,
  query: AuditPageQuery,
): Promise<AuditPage> {
  const own = await audit.history(key, { ...query, scope: environment.id })
  const stateAt = await flagStates(audit, own, environment.id, key, query.cursor)
  const used = new Set<string>()
  for (const state of stateAt.known) for (const segment of segmentKeysOf(state)) used.add(segment)
  const segments: AuditEntry[] = []
  if (used.size > 0) {
    // Segment rows older than this page's oldest flag entry belong to a later page.
    const last = own.entries[own.entries.length - 1]
    const since = own.nextCursor !== null && last ? last.revision : query.since
    let cursor = query.cursor
    for (;;) {
      const page = await audit.changes({
        scope: segmentScope(environment.projectId),
        since,
        cursor,
        limit: SEGMENT_SCAN,
      })
      for (const entry of page.entries) {
        if (!used.has(entry.key)) continue
        const state = stateAt.at(entry.revision)
        if (state && segmentKeysOf(state).has(entry.key)) segments.push(entry)
      }
      if (page.nextCursor === null || segments.length > query.limit) break
      cursor = page.nextCursor
    }
  }
  const merged = [...own.entries, ...segments].sort((a, b) => b.revision - a.revision)
  const entries = merged.slice(0, query.limit)
  const more = merged.length > query.limit || own.nextCursor !== null
  const oldest = entries[entries.length - 1]
  return { entries, nextCursor: more && oldest ? oldest.revision : null }
}

/**
 * The flag's state at any revision of the page's span, from its own entries:
 * after the newest entry below the revision, else before the oldest above it
 * (unknown where that was pruned). With no entry in the span, the flag's
 * newest row below the cursor (older than `since`) tells it.
 */
async function flagStates(
  audit: AuditLog,
  own: AuditPage,
  scope: string,
  key: string,
  cursor: number | undefined,
): Promise<{ known: StoredFlag[]; at: (revision: number) => StoredFlag | null }> {
  if (own.entries.length === 0) {
    const [below] = (await audit.history(key, { scope, cursor, limit: 1 })).entries
    const state = below?.after ?? null
    return { known: state ? [state] : [], at: () => state }
  }
  const entries = own.entries // newest first
  const known: StoredFlag[] = []
  for (const e of entries) {
    if (e.after) known.push(e.after)
    if (e.before) known.push(e.before)
  }
  const at = (revision: number): StoredFlag | null => {
    const below = entries.find((e) => e.revision < revision)
    if (below) return below.after
    const oldest = entries[entries.length - 1] as AuditEntry
    return oldest.beforeKnown ? oldest.before : null
  }
  return { known, at }
}
