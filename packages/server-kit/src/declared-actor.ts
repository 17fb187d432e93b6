import type { IncomingMessage } from 'node:http'
import { HttpError } from './http-error.js'

/** The header a client declares its user in; recorded as sent, marked unverified. */
export const ACTOR_HEADER = 'x-flagsync-actor'

/**
 * Characters an actor name may not hold once decoded: controls, format characters (the bidi overrides and
 * isolates among them, which make an audit entry read as another name: "\u202Enimda" shows as "admin"),
 * and line or paragraph separators.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u

/**
 * The declared actor of a request (`X-Flagsync-Actor`), or null. ASCII on the
 * wire (percent-encode anything else: Node reads raw header bytes as Latin-1,
 * so raw UTF-8 would be recorded as mojibake), then up to 256 printable
 * characters once decoded; other values are a 422 naming the header.
 */
export function declaredActor(req: IncomingMessage): string | null {
  const raw = req.headers[ACTOR_HEADER]
  if (raw === undefined) return null
  const value = Array.isArray(raw) ? raw.join(',') : raw
  if (/[^\x20-\x7e]/.test(value)) {
    throw invalid('must be ASCII: percent-encode other characters (UTF-8), e.g. caf%C3%A9')
  }
  let decoded = value
  try {
    decoded = decodeURIComponent(value)
  } catch {
    // Not percent-encoding: taken as sent.
  }
  if (decoded.length === 0 || decoded.length > 256 || UNPRINTABLE.test(decoded)) {
    throw invalid('must be 1 to 256 printable characters (no control, format or bidi characters)')
  }
  return decoded
}

function invalid(message: string): HttpError {
  return new HttpError('validation_failed', `X-Flagsync-Actor ${message}`, {
    issues: [{ path: 'headers.x-flagsync-actor', message }],
  })
}
