import type { Issue } from './errors.js'
import { type Flag, flagPatchSchema, flagSchema } from './flag.js'
import { toIssues } from './format-issues.js'
import { mergeFlagPatch } from './patch-flag.js'

/** The merged flag, valid by `flagSchema`; or every problem with the patch or the result (nothing is thrown). */
export type PatchResult = { ok: true; flag: Flag } | { ok: false; issues: Issue[] }

/**
 * Applies a JSON merge patch (RFC 7396) to a flag's top-level fields: given
 * fields replace, arrays replace whole, null clears a nullable field, and the
 * key cannot change. Pure, so the API, the receiver and the client's local
 * view all merge the same way.
 *
 * @example
 * ```ts
 * const result = applyFlagPatch(flag, { rollout_percentage: 50, description: null })
 * if (result.ok) save(result.flag)
 * else reply(422, { error: 'validation_failed', issues: result.issues })
 * ```
 */
export function applyFlagPatch(flag: Flag, patch: unknown): PatchResult {
  const parsed = flagPatchSchema.safeParse(patch)
  if (!parsed.success) return { ok: false, issues: toIssues(parsed.error) }
  if (parsed.data.key !== undefined && parsed.data.key !== flag.key) {
    return { ok: false, issues: [{ path: 'key', message: `the key cannot change (is ${JSON.stringify(flag.key)})` }] }
  }
  const result = flagSchema.safeParse(mergeFlagPatch(flag, parsed.data))
  return result.success ? { ok: true, flag: result.data } : { ok: false, issues: toIssues(result.error) }
}
