import { createOfrepRouter, HttpError, type OfrepWatch } from '@flagsync/server-kit'
import type { Express, Request } from 'express'
import { authOf } from '../auth/guards.js'
import type { FeatureMountContext } from '../feature-mount.js'
import { isSegmentScope, projectOfSegmentScope } from '../flags/expand.js'
import { flagStreamsOf } from '../flags/index.js'
import { UUID_PATTERN } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import type { FlagStreams } from '../streams/flag-streams.js'
import { readScopeChanges } from '../streams/resume.js'
import { snapshotFlags } from '../streams/snapshot-flags.js'

/**
 * OFREP on the flag service (`/ofrep/v1`): an SDK key (`Authorization:
 * Bearer` or `X-API-Key`) evaluates its own environment's flags, segments
 * expanded exactly as the SDK stream and snapshot serve them. A flag change
 * notifies that environment's refresh streams; a segment change, those of
 * its project's environments.
 */
export function mountOfrepFeature(app: Express, runtime: ServiceRuntime, ctx: FeatureMountContext): void {
  const streams = flagStreamsOf(runtime, ctx.flags)
  const projectOf = new Map<string, string>()

  const resolveScope = async (req: Request) => {
    const key = authOf(req).sdkKey
    if (!key) {
      throw new HttpError('forbidden', 'OFREP evaluates for an SDK key (Authorization: Bearer <key> or X-API-Key)')
    }
    // Its refresh stream ends when the key is deleted, as its `/stream` does.
    if (req.path === '/events' && req.method === 'GET' && req.res) streams.sdkKeyStreams.track(req.res, key.id)
    await streams.ready()
    projectOf.set(key.environmentId, key.projectId)
    const flags = snapshotFlags(streams, key.environmentId, key.projectId)
    return { id: key.environmentId, flags, revision: streams.live.revision }
  }

  const router = createOfrepRouter({
    name: 'flagsync flag service',
    auth: ctx.auth,
    resolveScope,
    watch: watchEnvironments(streams, projectOf),
    catchUp: () => streams.current(),
    // A resuming provider re-fetches only if its environment (or its project's segments) changed meanwhile.
    missedChanges: (env, from, upTo) => {
      const projectId = projectOf.get(env)
      if (projectId === undefined) return Promise.resolve(undefined)
      return readScopeChanges(runtime.store, { environments: [{ id: env, projectId }], dashboard: false }, from, upTo)
    },
    bodyLimit: ctx.routerOptions.bodyLimit,
    onStop: (stop) => runtime.onClose(stop),
  })
  app.use('/ofrep/v1', router)
}

/** The environments each change touched: its own for a flag, every known one of the project for a segment. */
function watchEnvironments(streams: FlagStreams, projectOf: ReadonlyMap<string, string>): OfrepWatch {
  return (onChange) => {
    // Registered after the engine's own listener, so the snapshot already holds the change when providers re-fetch.
    const stopChanges = streams.feed.onChanges((changes) => {
      for (const change of changes) {
        if (UUID_PATTERN.test(change.scope)) onChange([change.scope], change.revision)
        else if (isSegmentScope(change.scope)) {
          const project = projectOfSegmentScope(change.scope)
          const envs = [...projectOf].filter(([, p]) => p === project).map(([env]) => env)
          if (envs.length > 0) onChange(envs, change.revision)
        }
      }
    })
    const stopReset = streams.feed.onReset(() => onChange('*', streams.live.revision))
    return () => {
      stopChanges()
      stopReset()
    }
  }
}
