import { type FlagChange, type FlagStore, type LiveFlagSet, readMissedChanges } from '@flagsync/store'
import { ENVIRONMENT_ORDER_SCOPE } from '../environments/order.js'
import {
  isSegmentScope,
  projectOfSegmentScope,
  type SegmentLookup,
  segmentKeysOf,
  segmentScope,
} from '../flags/expand.js'
import { sdkJson } from './environment-view.js'
import { deleteFrame, environmentsFrame, readyFrame, resumedServiceFrame, upsertFrame } from './frames.js'
import type { EnvironmentRef } from './options.js'

/** A client further behind than this many changes to its scope gets a full bootstrap instead. */
const MAX_RESUMED_CHANGES = 1000

/** What a resuming stream follows: its environments, and whether it is a dashboard's (which also hears reorders). */
export interface ResumeScope {
  environments: readonly EnvironmentRef[]
  dashboard: boolean
}

/**
 * The change-log entries a client of `scope` that last saw `from` missed, up
 * to `upTo`: its environments' flags, their projects' segments and (dashboards)
 * reorders. Undefined: a full bootstrap instead (`readMissedChanges`).
 */
export function readScopeChanges(
  store: FlagStore,
  scope: ResumeScope,
  from: number,
  upTo: number,
): Promise<FlagChange[] | undefined> {
  const projects = new Set(scope.environments.map((env) => env.projectId))
  const scopes = [...scope.environments.map((env) => env.id), ...[...projects].map(segmentScope)]
  if (scope.dashboard) scopes.push(ENVIRONMENT_ORDER_SCOPE)
  return readMissedChanges(store, from, upTo, { scopes, limit: MAX_RESUMED_CHANGES })
}

interface Touch {
  revision: number
  frame: () => string
  /** An `environments` event (dashboards), not a flag update. */
  reorder?: true
}

/**
 * A resumed stream: `resumed`, then the current state of every flag the
 * missed changes touched (an UPSERT, or a DELETE for a flag gone), each once,
 * with the revision of the last change that touched it as id, in that order;
 * a segment change touches every flag that references the segment now. Then
 * `ready` with the number of updates. Cut off after id r, a client holds the
 * current state of every flag last touched at or before r, and the log after
 * r names the rest: resuming again from r is exact.
 */
export function resumeFrames(
  from: number,
  changes: readonly FlagChange[],
  scope: ResumeScope,
  live: LiveFlagSet,
  segments: (projectId: string) => SegmentLookup,
): string {
  const touched = new Map<string, Touch>()
  const touch = (env: EnvironmentRef, key: string, revision: number) =>
    touched.set(`${env.id}\n${key}`, { revision, frame: () => flagFrame(live, env, key, revision, segments) })
  const byId = new Map(scope.environments.map((env) => [env.id, env]))
  for (const change of changes) {
    const env = byId.get(change.scope)
    if (env) touch(env, change.key, change.revision)
    else if (isSegmentScope(change.scope)) {
      const project = projectOfSegmentScope(change.scope)
      for (const followed of scope.environments) {
        if (followed.projectId !== project) continue
        for (const entry of live.list(followed.id))
          if (segmentKeysOf(entry.flag).has(change.key)) touch(followed, entry.flag.key, change.revision)
      }
    } else if (change.scope === ENVIRONMENT_ORDER_SCOPE && scope.dashboard) {
      const ids = change.flag?.environment_ids
      const projectId = change.flag?.project_id
      if (!Array.isArray(ids) || typeof projectId !== 'string') continue
      if (!scope.environments.some((e) => e.projectId === projectId)) continue
      touched.set(`order\n${projectId}`, {
        revision: change.revision,
        frame: () => environmentsFrame(projectId, ids, change.revision),
        reorder: true,
      })
    }
  }
  const ordered = [...touched.values()].sort((a, b) => a.revision - b.revision)
  const connected = scope.dashboard ? null : (scope.environments[0]?.id ?? null)
  const updates = ordered.filter((t) => !t.reorder).length
  return resumedServiceFrame(from, connected) + ordered.map((t) => t.frame()).join('') + readyFrame(updates)
}

/** A flag's UPSERT as SDKs see it now (segments expanded), or its DELETE when it is gone. */
function flagFrame(
  live: LiveFlagSet,
  env: EnvironmentRef,
  key: string,
  revision: number,
  segments: (projectId: string) => SegmentLookup,
): string {
  const entry = live.get(key, env.id)
  if (!entry) return deleteFrame(env.id, key, revision)
  return upsertFrame(env.id, sdkJson(entry, segments(env.projectId)), revision)
}
