import type { ClientFlag } from './types.js'

/** The highest `revision` among `flags`; undefined when none carries one. */
function newestRevision(flags: Iterable<ClientFlag>): number | undefined {
  let newest: number | undefined
  for (const flag of flags) {
    const revision = flag.revision
    if (typeof revision === 'number' && (newest === undefined || revision > newest)) newest = revision
  }
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
  const mine = newestRevision(candidate)
  const theirs = newestRevision(than)
  return mine !== undefined && theirs !== undefined && mine > theirs
}

/** The `bootstrap` option as a set: entries without a string `key` are skipped; none (or no array) is no bootstrap. */
export function bootstrapSet(flags: unknown): Map<string, ClientFlag> | undefined {
  if (!Array.isArray(flags)) return undefined
  const set = new Map<string, ClientFlag>()
  for (const flag of flags as unknown[]) {
    if (typeof flag === 'object' && flag !== null && typeof (flag as ClientFlag).key === 'string') {
      set.set((flag as ClientFlag).key, flag as ClientFlag)
    }
  }
  return set
}
