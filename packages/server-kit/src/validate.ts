import { toIssues } from '@flagsync/protocol'
import type { z } from 'zod'
import { HttpError } from './http-error.js'

/** Parses with a protocol schema or throws a 422 that names every failing field. */
export function parseOr422<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value)
  if (result.success) return result.data
  const issues = toIssues(result.error)
  const first = issues[0]
  const summary = first ? `${first.path}: ${first.message}` : 'invalid'
  return raise(new HttpError('validation_failed', `invalid ${what}: ${summary}`, { issues }))
}

function raise(error: HttpError): never {
  throw error
}
