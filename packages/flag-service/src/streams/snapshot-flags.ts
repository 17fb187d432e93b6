import type { EvaluableFlag } from '@flagsync/protocol'
import type { FlagStreams } from './flag-streams.js'

// The snapshot buffer is the same until the environment changes: parsed once per change, not per request.
const parsed = new WeakMap<Buffer, EvaluableFlag[]>()

/** An environment's flags exactly as the SDK snapshot serves them (segments expanded); call after `streams.ready()`. */
export function snapshotFlags(streams: FlagStreams, environmentId: string, projectId: string): EvaluableFlag[] {
  const { body } = streams.snapshot(environmentId, projectId)
  let flags = parsed.get(body)
  if (!flags) {
    flags = JSON.parse(body.toString('utf8')) as EvaluableFlag[]
    parsed.set(body, flags)
  }
  return flags
}
