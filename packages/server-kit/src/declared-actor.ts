import type { IncomingMessage } from 'node:http'
import { HttpError } from './http-error.js'

/** The header a client declares its user in; recorded as sent, marked unverified. */
export const ACTOR_HEADER = 'x-flagsync-actor'

/**
 * The declared actor of a request (`X-Flagsync-Actor`), or null. Printable
 * text up to 256 characters (percent-encode anything else); other values are a 422.
 */
export function declaredActor(req: IncomingMessage): string | null {
  const raw = req.headers[ACTOR_HEADER]
  if (raw === undefined) return null
  const value = Array.isArray(raw) ? raw.join(',') : raw
  let decoded = value
  try {
    decoded = decodeURIComponent(value)
  } catch {
    // Not percent-encoding: taken as sent.
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (decoded.length === 0 || decoded.length > 256 || /[\u0000-\u001f\u007f]/.test(decoded)) {
    throw new HttpError('validation_failed', 'X-Flagsync-Actor must be 1 to 256 printable characters', {
      issues: [{ path: 'headers.x-flagsync-actor', message: 'must be 1 to 256 printable characters' }],
    })
  }
  return decoded
}
