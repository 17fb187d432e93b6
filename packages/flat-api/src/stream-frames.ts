import { formatSseComment, formatSseEvent } from '@flagsync/server-kit'
import type { FlagChange, LiveEntry } from '@flagsync/store'

// Flags are already serialized by the store, so frames are built by string
// concatenation around that JSON instead of re-serializing the whole event.

export const CONNECTED_FRAME = formatSseEvent({ event: 'connected', data: 'true' })

export function upsertFrame(json: string, revision?: number): string {
  return formatSseEvent({ event: 'update', data: `{"type":"UPSERT","flag":${json}}`, id: revision })
}

export function changeFrame(change: FlagChange): string {
  if (change.json !== null) return upsertFrame(change.json, change.revision)
  return formatSseEvent({
    event: 'update',
    data: `{"type":"DELETE","key":${JSON.stringify(change.key)}}`,
    id: change.revision,
  })
}

/**
 * Document 2 has no `ready` event; this comment (ignored by EventSource, as
 * the spec requires of comments) tells our own client the bootstrap is over.
 */
export const BOOTSTRAP_COMPLETE_FRAME = formatSseComment('bootstrap complete')

/** connected + one UPSERT per flag + the end marker, as one chunk so a new subscriber gets it in one write. */
export function bootstrapFrames(entries: LiveEntry[]): string {
  let out = CONNECTED_FRAME
  for (const entry of entries) out += upsertFrame(entry.json)
  return out + BOOTSTRAP_COMPLETE_FRAME
}
