import { createHash } from 'node:crypto'
import { type LiveEntry, type LiveFlagSet, withRevision } from '@flagsync/store'
import { expandFlag, referencesSegments, type SegmentLookup } from '../flags/expand.js'
import { connectedFrame, readyFrame, upsertFrame } from './frames.js'

/** A bootstrap update and the revision it carries as id (what merging several environments' orders by). */
export interface ViewFrame {
  revision: number
  frame: string
}

/** One environment's flags as SDKs see them (segment-expanded), built once per change and shared by every reader. */
export interface EnvironmentView {
  projectId: string
  /** connected + one UPSERT per flag + ready, for an SDK-key connection; written by reference, never copied. */
  bootstrap: Buffer
  /** The UPSERT frames alone, in revision order (a dashboard connection merges several environments'). */
  frames: readonly ViewFrame[]
  /** `frames` as one buffer (a dashboard that follows this one environment). */
  updates: Buffer
  count: number
  /** `/flags/snapshot`: the same flags as a JSON array, and its strong ETag. */
  snapshot: Buffer
  etag: string
}

/** A flag's JSON as SDKs get it: segments expanded (with `lookup`), its own revision in it. */
export function sdkJson(entry: LiveEntry, lookup: SegmentLookup): string {
  return referencesSegments(entry.flag)
    ? withRevision(JSON.stringify(expandFlag(entry.flag, lookup)), entry.revision)
    : entry.json
}

/**
 * Builds an environment's view from the live set, expanding the flags that
 * reference segments with `lookup`. Bootstrap updates go in revision order,
 * each with its flag's revision as id, after a `connected` that clears the
 * client's id: a client cut off after id r holds every flag last changed at or
 * before r, and the change log after r has the rest, so resuming from r ends
 * in the full state. The snapshot stays in key order.
 */
export function buildEnvironmentView(
  live: LiveFlagSet,
  environmentId: string,
  projectId: string,
  lookup: SegmentLookup,
): EnvironmentView {
  const jsons: string[] = []
  const frames: ViewFrame[] = []
  for (const entry of live.list(environmentId)) {
    const json = sdkJson(entry, lookup)
    jsons.push(json)
    frames.push({ revision: entry.revision, frame: upsertFrame(environmentId, json, entry.revision) })
  }
  frames.sort((a, b) => a.revision - b.revision)
  const updates = frames.map((f) => f.frame).join('')
  const snapshot = Buffer.from(`[${jsons.join(',')}]`)
  return {
    projectId,
    bootstrap: Buffer.from(connectedFrame(environmentId) + updates + readyFrame(jsons.length)),
    frames,
    updates: Buffer.from(updates),
    count: jsons.length,
    snapshot,
    etag: `"${createHash('sha1').update(snapshot).digest('base64url')}"`,
  }
}

/**
 * A dashboard's bootstrap: `connected` (null environment), the updates of
 * every environment it follows merged in revision order (resumable like an
 * SDK stream's), `ready` with the total. One environment's updates are its
 * shared buffer, written by reference.
 */
export function dashboardBootstrap(views: readonly EnvironmentView[]): Array<string | Buffer> {
  const count = views.reduce((n, view) => n + view.count, 0)
  const [only] = views
  if (views.length === 1 && only) return [connectedFrame(null), only.updates, readyFrame(count)]
  const frames = views.flatMap((view) => view.frames).sort((a, b) => a.revision - b.revision)
  return [connectedFrame(null) + frames.map((f) => f.frame).join('') + readyFrame(count)]
}
