import { createHash } from 'node:crypto'
import { type LiveFlagSet, withRevision } from '@flagsync/store'
import { expandFlag, referencesSegments, type SegmentLookup } from './expand.js'
import { connectedFrame, readyFrame, upsertFrame } from './stream-frames.js'

/** One environment's flags as SDKs see them (segment-expanded), built once per change and shared by every reader. */
export interface EnvironmentView {
  projectId: string
  /** connected + one UPSERT per flag + ready, for an SDK-key connection; written by reference, never copied. */
  bootstrap: Buffer
  /** The UPSERT frames alone (dashboard connections are sent several environments' in turn). */
  updates: Buffer
  count: number
  /** `/flags/snapshot`: the same flags as a JSON array, and its strong ETag. */
  snapshot: Buffer
  etag: string
}

/** Builds an environment's view from the live set, expanding the flags that reference segments with `lookup`. */
export function buildEnvironmentView(
  live: LiveFlagSet,
  environmentId: string,
  projectId: string,
  lookup: SegmentLookup,
): EnvironmentView {
  let updates = ''
  const jsons: string[] = []
  for (const entry of live.list(environmentId)) {
    const json = referencesSegments(entry.flag)
      ? withRevision(JSON.stringify(expandFlag(entry.flag, lookup)), entry.revision)
      : entry.json
    jsons.push(json)
    // Bootstrap updates carry their flag's revision as `id:` like live ones. The flag service's events have every
    // (re)connection replay the whole set, so the service never resumes from Last-Event-ID: the id is
    // information (the revision of that flag), in key order, not a resume point.
    updates += upsertFrame(environmentId, json, entry.revision)
  }
  const snapshot = Buffer.from(`[${jsons.join(',')}]`)
  return {
    projectId,
    bootstrap: Buffer.from(connectedFrame(environmentId) + updates + readyFrame(jsons.length)),
    updates: Buffer.from(updates),
    count: jsons.length,
    snapshot,
    etag: `"${createHash('sha1').update(snapshot).digest('base64url')}"`,
  }
}
