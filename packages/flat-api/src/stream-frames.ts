import { formatSseComment, formatSseEvent, resumedFrame } from '@flagsync/server-kit'
import { type FlagChange, type LiveEntry, withRevision } from '@flagsync/store'

// Flags are already serialized by the store, so frames are built by string
// concatenation around that JSON instead of re-serializing the whole event.

/**
 * A full bootstrap's `connected` carries an empty `id:`, which clears the
 * client's last event id: a client cut off before the first flag then
 * reconnects without Last-Event-ID and gets a full bootstrap again, instead of
 * resuming an old position on top of the store it has just cleared.
 */
const CONNECTED_FRAME = formatSseEvent({ event: 'connected', data: 'true', id: '' })

function upsertFrame(json: string, revision?: number): string {
  return formatSseEvent({ event: 'update', data: `{"type":"UPSERT","flag":${json}}`, id: revision })
}

export function changeFrame(change: FlagChange): string {
  if (change.json !== null) return upsertFrame(withRevision(change.json, change.revision), change.revision)
  return formatSseEvent({
    event: 'update',
    data: `{"type":"DELETE","key":${JSON.stringify(change.key)}}`,
    id: change.revision,
  })
}

/**
 * The flat API has no `ready` event; this comment (ignored by EventSource, as
 * the spec requires of comments) tells our own client the bootstrap is over.
 */
const BOOTSTRAP_COMPLETE_FRAME = formatSseComment('bootstrap complete')

/**
 * connected + one UPSERT per flag + the end marker, as one chunk so a new
 * subscriber gets it in one write. Flags go in revision order, each with its
 * revision as id: a client cut off after the flag with id r holds exactly the
 * flags whose last change is at or before r, and every later one is in the
 * change log after r, so resuming from r (a partial bootstrap included) ends
 * in the full state.
 */
export function bootstrapFrames(entries: LiveEntry[]): string {
  let out = CONNECTED_FRAME
  for (const entry of [...entries].sort((a, b) => a.revision - b.revision))
    out += upsertFrame(entry.json, entry.revision)
  return out + BOOTSTRAP_COMPLETE_FRAME
}

/** A resumed stream: `resumed` (with the resume id), the missed changes in order, the end marker. */
export function resumeFrames(from: number, changes: readonly FlagChange[]): string {
  let out = resumedFrame(from)
  for (const change of changes) out += changeFrame(change)
  return out + BOOTSTRAP_COMPLETE_FRAME
}
