import type { $ZodError } from 'zod/v4/core'
import type { Issue } from './errors.js'

/** `rules[0].operator`, or `(root)` for the value itself. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out === '' ? String(part) : `.${String(part)}`
  }
  return out === '' ? '(root)' : out
}

/** Flattens a zod failure into `{path, message}` pairs, one per failing field. */
export function toIssues(error: $ZodError, prefix: readonly PropertyKey[] = []): Issue[] {
  return error.issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path]
    if (issue.code === 'unrecognized_keys') {
      // One issue per unknown field, at its own path, so a typo is named where it is.
      return issue.keys.map((k) => ({ path: formatPath([...path, k]), message: 'unknown field' }))
    }
    return [{ path: formatPath(path), message: issue.message }]
  })
}

/** One readable sentence naming every failing field, e.g. `is_enabled: expected boolean, received string`. */
export function formatZodError(error: $ZodError, prefix: readonly PropertyKey[] = []): string {
  return toIssues(error, prefix)
    .map((i) => `${i.path}: ${i.message}`)
    .join('; ')
}
