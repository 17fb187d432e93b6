import type { ClientFlag } from './types.js'

/** The highest `revision` among `flags`; NaN (compared as neither higher nor lower) when none carries one. */
function newestRevision(flags: Iterable<ClientFlag>): number {
  let newest = Number.NaN
  for (const { revision } of flags) if (typeof revision === 'number' && !(revision <= newest)) newest = revision
  return newest
}

/**
 * Whether `candidate` holds changes `than` does not: both sets carry
 * revisions (the server's change log orders them) and the highest of
 * `candidate` is above the highest of `than`. Equal or unordered sets are not
 * newer, so a set of unknown age never replaces one the page was given.
 *
 * @example
 * isNewerFlagSet([{ key: 'a', is_enabled: true, revision: 8 }], [{ key: 'a', is_enabled: false, revision: 7 }]) // true
 */
export function isNewerFlagSet(candidate: Iterable<ClientFlag>, than: Iterable<ClientFlag>): boolean {
  return newestRevision(candidate) > newestRevision(than)
}

/** The `bootstrap` option as a set: entries without a string `key` are skipped; none (or no array) is no bootstrap. */
export function bootstrapSet(flags: unknown): Map<string, ClientFlag> | undefined {
  if (!Array.isArray(flags)) return undefined
  const valid = (flags as Array<Partial<ClientFlag> | null>).filter((f) => typeof f?.key === 'string')
  return new Map((valid as ClientFlag[]).map((f) => [f.key, f]))
}
