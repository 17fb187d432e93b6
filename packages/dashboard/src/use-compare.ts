import type { FlagFieldDifference } from '@flagsync/protocol'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { ApiError, api } from './api.js'
import { queryKeys } from './query-keys.js'
import type { Flag } from './types.js'

/** One key of `GET /api/projects/:id/compare`: how it stands in the two environments. */
export interface ComparedFlag {
  key: string
  status: 'same' | 'different' | 'only_in_from' | 'only_in_to'
  from_revision: number | null
  to_revision: number | null
  differences: FlagFieldDifference[]
}

export interface Comparison {
  from: { id: string; name: string }
  to: { id: string; name: string }
  flags: ComparedFlag[]
}

/** What `POST /api/projects/:id/promote` answers: each flag as it now is in the target. */
export interface Promoted {
  from_env_id: string
  to_env_id: string
  flags: Array<{ key: string; changed: boolean; flag: Flag }>
}

/** A flag a promotion refused because the target changed since the comparison: its revision there now. */
export interface PromotionConflict {
  key: string
  currentRevision: number | null
  reason: string
}

/** The two environments side by side, read again whenever either changes (a promotion invalidates it). */
export function useComparison(projectId: string, fromId: string, toId: string) {
  return useQuery({
    queryKey: queryKeys.comparison(projectId, fromId, toId),
    queryFn: () =>
      api<Comparison>(
        'GET',
        `/api/projects/${projectId}/compare?from=${encodeURIComponent(fromId)}&to=${encodeURIComponent(toId)}`,
      ),
    enabled: fromId !== '' && toId !== '',
  })
}

/**
 * Promotes the chosen flags from `from` to `to` in one request, each against the target revision the comparison
 * showed: all or nothing. Afterwards the target's flags and every comparison are read again.
 */
export function usePromoteMany(projectId: string) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: { from: string; to: string; flags: ComparedFlag[] }) =>
      api<Promoted>('POST', `/api/projects/${projectId}/promote`, {
        from_env_id: input.from,
        to_env_id: input.to,
        flags: input.flags.map((f) => ({ key: f.key, base_revision: f.to_revision })),
      }),
    // A 409 leaves the comparison as the caller saw it: the page names the flags, and Refresh reads them again.
    onSuccess: (_data, input) =>
      Promise.all([
        client.invalidateQueries({ queryKey: queryKeys.editableFlags(input.to) }),
        client.invalidateQueries({ queryKey: queryKeys.comparison(projectId, input.from, input.to) }),
      ]),
  })
}

/** The flags a 409 of the promotion names, or null for any other failure. */
export function promotionConflictsOf(error: unknown): PromotionConflict[] | null {
  if (!(error instanceof ApiError) || error.status !== 409 || !Array.isArray(error.body.conflicts)) return null
  return (error.body.conflicts as Array<Record<string, unknown>>).map((c) => ({
    key: String(c.recordId),
    currentRevision: typeof c.currentRevision === 'number' ? c.currentRevision : null,
    reason: String(c.reason ?? ''),
  }))
}

const FLAG_ISSUE = /^flags\[(\d+)\]\.(.+)$/
const NO_FLAG = /^no flag "([^"]+)"/

/**
 * A 422 of the promotion as one line per flag it names (`flags[i]…` issues), in the reader's words: a prerequisite
 * the target lacks says which flag to choose too. Null for any other failure, or issues naming no flag.
 */
export function promotionRefusalOf(error: unknown, flags: readonly ComparedFlag[], c: Comparison): string[] | null {
  if (!(error instanceof ApiError) || error.status !== 422 || !error.body.issues) return null
  const lines = error.body.issues.flatMap(({ path, message }) => {
    const [, index, field = ''] = FLAG_ISSUE.exec(path) ?? []
    const key = flags[Number(index)]?.key
    if (key === undefined) return []
    const missing = NO_FLAG.exec(message)?.[1]
    if (field === 'key') return [`${key} is no longer in ${c.from.name}: refresh the comparison.`]
    if (field.startsWith('prerequisites') && missing !== undefined) {
      return [`${key} needs ${missing}, which ${c.to.name} does not have: choose ${missing} too.`]
    }
    return [`${key}: ${field} ${message}.`]
  })
  return lines.length > 0 ? lines : null
}
