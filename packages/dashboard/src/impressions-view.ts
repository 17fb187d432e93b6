import type { FlagType } from '@flagsync/protocol'
import type { Environment } from './types.js'

// What the impressions page shows, as pure functions of what the service answered (tested without a browser).

/** One entry of GET …/impressions/stats. */
export interface ImpressionStats {
  flag_key: string
  total: number
  true_count: number
  false_count: number
  unique_users: number
  last_seen: string
  /** The most evaluated served values, lifetime counts, most evaluated first. */
  values?: Array<{ value: string; count: number }>
}

/** The environment shown: the one chosen while it exists, else the default one, else the first. */
export function shownEnvironmentId(environments: readonly Environment[], chosen: string): string {
  if (environments.some((e) => e.id === chosen)) return chosen
  return environments.find((e) => e.is_default)?.id ?? environments[0]?.id ?? ''
}

/**
 * The flag shown: the one chosen while it has stats, else the first (by key)
 * that is a flag of the environment now, so a key the environment never had
 * or no longer has is never the default. `flagKeys` undefined (the flags did
 * not load): the first entry.
 */
export function shownFlagKey(
  stats: readonly ImpressionStats[],
  flagKeys: ReadonlySet<string> | undefined,
  chosen: string,
): string {
  if (chosen && stats.some((s) => s.flag_key === chosen)) return chosen
  const first = flagKeys ? stats.find((s) => flagKeys.has(s.flag_key)) : stats[0]
  return first?.flag_key ?? ''
}

/**
 * The counts per served value: `true` and `false` for a boolean flag, else
 * the values the flag served (a string, integer or json flag, or a flag that
 * no longer exists, whose type is unknown).
 */
export function servedValueCounts(
  stats: ImpressionStats,
  flagType: FlagType | undefined,
): Array<{ value: string; count: number }> {
  if (flagType === 'boolean') {
    return [
      { value: 'true', count: stats.true_count },
      { value: 'false', count: stats.false_count },
    ]
  }
  return stats.values ?? []
}
