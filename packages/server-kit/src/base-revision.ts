import type { IncomingHttpHeaders } from 'node:http'
import { HttpError } from './http-error.js'

const REVISION = /^(?:W\/)?"?(\d{1,15})"?$/

const badBase = (path: string, message: string) =>
  new HttpError('validation_failed', `invalid base revision: ${path}: ${message}`, { issues: [{ path, message }] })

/**
 * The base revision of a write (PATCH, POST replace, promote, DELETE): `If-Match: "<revision>"` (the flag's
 * `revision` as an entity tag; `*` means none) or `base_revision` in the
 * body, which is taken out of the body. Both must agree when both are sent.
 * A malformed one is a `validation_failed` naming `invalid base revision`.
 */
export function baseRevisionOf(
  req: { headers: IncomingHttpHeaders },
  body: unknown,
): { base: number | undefined; body: unknown } {
  let fromBody: number | undefined
  let rest = body
  if (typeof body === 'object' && body !== null && !Array.isArray(body) && Object.hasOwn(body, 'base_revision')) {
    const { base_revision: raw, ...others } = body as Record<string, unknown>
    if (typeof raw !== 'number' || !Number.isSafeInteger(raw) || raw < 0) {
      throw badBase('base_revision', 'must be a non-negative integer (the revision of the flag you edited)')
    }
    fromBody = raw
    rest = others
  }
  const header = req.headers['if-match']
  let fromHeader: number | undefined
  if (header !== undefined && header.trim() !== '*') {
    const match = REVISION.exec(header.trim())
    if (!match) throw badBase('headers.if-match', 'must be the flag\'s revision as an entity tag, e.g. "42"')
    fromHeader = Number(match[1])
  }
  if (fromBody !== undefined && fromHeader !== undefined && fromBody !== fromHeader) {
    throw badBase('base_revision', `differs from If-Match (${fromHeader}); send one of them`)
  }
  return { base: fromBody ?? fromHeader, body: rest }
}
