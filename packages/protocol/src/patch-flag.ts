import { parseFlag, parseFlagPatch } from './browser-parsers.js'
import type { Flag, FlagPatch } from './flag.js'

/** The merge step of a flat merge patch: given fields replace (arrays whole), absent and undefined ones do not. */
export function mergeFlagPatch(flag: Flag, patch: FlagPatch): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...flag }
  for (const [field, value] of Object.entries(patch)) {
    if (value !== undefined) merged[field] = value
  }
  return merged
}

/**
 * `applyFlagPatch`'s answer without the reasons: the patched flag, or
 * undefined where `applyFlagPatch` fails. Checked with the generated parsers
 * (same schemas), so a browser bundle that merges local edits carries no zod.
 */
export function patchFlag(flag: Flag, patch: unknown): Flag | undefined {
  const parsed = parseFlagPatch(patch)
  if (!parsed || (parsed.key !== undefined && parsed.key !== flag.key)) return undefined
  return parseFlag(mergeFlagPatch(flag, parsed))
}
