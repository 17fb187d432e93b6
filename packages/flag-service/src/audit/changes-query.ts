import { AUDIT_PAGE_SIZE, auditQuerySchema, flagKeySchema } from '@flagsync/protocol'
import { type AuditPageQuery, HttpError, parseOr422 } from '@flagsync/server-kit'
import * as z from 'zod/mini'

/** How many values a repeatable filter (`flag`, `environment_id`) takes. */
const MAX_VALUES = 50

// A parameter given once arrives as a string, repeated as an array: both read as a list. The count is checked
// after the union, which would report its own failure as "Invalid input".
const listOf = <T extends z.ZodMiniType<string, string>>(item: T) =>
  z.pipe(
    z.union([z.string(), z.array(z.string())]),
    z.pipe(
      z.transform((value: string | string[]) => (Array.isArray(value) ? value : [value])),
      z.array(item).check(z.maxLength(MAX_VALUES, `at most ${MAX_VALUES} values`)),
    ),
  )

// An instant, never a local time: `2026-11-28`, or a time without `Z`/`+01:00`, would mean a different moment
// to every reader of a shared link.
const ZONED_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i
const ZONED_MESSAGE = 'must be an ISO 8601 time with a zone, e.g. 2026-11-28T09:00:00Z'
/** A real calendar day and clock time: `Date.parse` rolls 2026-02-30 over to March. */
function isRealTime(value: string): boolean {
  const [year, month, day, hour, minute] = value.split(/[-T:]/, 5).map(Number) as [
    number,
    number,
    number,
    number,
    number,
  ]
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day && hour < 24 && minute < 60
}
const isZonedTime = (value: string) => ZONED_TIME.test(value) && isRealTime(value) && !Number.isNaN(Date.parse(value))
// `…T09:00:00+01:00` typed into a URL unencoded reads `…T09:00:00 01:00`: a space is never valid there, so it is the +.
const PLUS_AS_SPACE = / (\d{2}:\d{2})$/
const timeParam = z.pipe(
  z.pipe(
    z.string(),
    z.transform((value) => value.replace(PLUS_AS_SPACE, '+$1')),
  ),
  z.pipe(
    z.string().check(z.refine(isZonedTime, ZONED_MESSAGE)),
    z.transform((value) => Date.parse(value)),
  ),
)

const filters = {
  flag: z.optional(listOf(flagKeySchema)),
  // No name the trail holds has a control character (X-Flagsync-Actor refuses them too), and PostgreSQL text
  // cannot hold a NUL: such an actor is a 422 naming it on both dialects, not an empty page or a driver error.
  actor: z.optional(
    z
      .string()
      .check(
        z.minLength(1, 'must not be empty'),
        z.maxLength(512),
        z.regex(/^[^\p{Cc}]*$/u, 'must not contain control characters'),
      ),
  ),
  from: z.optional(timeParam),
  to: z.optional(timeParam),
}
const environmentChangesSchema = z.extend(auditQuerySchema, filters)
const projectChangesSchema = z.extend(auditQuerySchema, {
  ...filters,
  environment_id: z.optional(listOf(z.string().check(z.minLength(1), z.maxLength(64)))),
})

/** The filters of the change routes, parsed; each absent when the query does not name it. */
export interface ChangesQuery extends AuditPageQuery {
  /** Flag keys (`?flag=`, repeatable). */
  flags?: string[]
  /** A user id or a name as the trail shows it (`?actor=`). */
  actor?: string
  /** ms since the epoch, inclusive (`?from=`). */
  from?: number
  /** ms since the epoch, exclusive (`?to=`). */
  to?: number
  /** The project route's `?environment_id=` (repeatable). */
  environmentIds?: string[]
}

/**
 * `GET …/changes`'s query: the page (`since`, `cursor`, `limit`) and the filters. A bad value, an unknown
 * parameter, or `from` after `to` is a 422 naming the parameter. A `cursor` is a revision, so it pages any
 * filter: the next page of the same filters, or the entries below it that other filters match.
 */
export function changesQueryOf(query: unknown, route: 'environment' | 'project'): ChangesQuery {
  const schema = route === 'project' ? projectChangesSchema : environmentChangesSchema
  const q = parseOr422(schema, query, 'query') as z.output<typeof projectChangesSchema>
  if (q.from !== undefined && q.to !== undefined && q.from > q.to) {
    const message = 'must not be after to'
    throw new HttpError('validation_failed', `invalid query: from: ${message}`, {
      issues: [{ path: 'from', message }],
    })
  }
  return {
    since: q.since,
    cursor: q.cursor,
    limit: q.limit ?? AUDIT_PAGE_SIZE,
    flags: q.flag === undefined ? undefined : [...new Set(q.flag)],
    actor: q.actor,
    from: q.from,
    to: q.to,
    environmentIds: q.environment_id === undefined ? undefined : [...new Set(q.environment_id)],
  }
}
