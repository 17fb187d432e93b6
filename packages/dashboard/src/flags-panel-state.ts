import type { Operation } from '@flagsync/protocol'
import { useCallback, useState } from 'react'
import { errorText } from './api.js'
import { flagWriter } from './flag-write.js'
import type { LiveFlags } from './live-flags.js'
import type { Outbox } from './offline-edits.js'
import type { Environment, Flag } from './types.js'

/**
 * The outbox the lazily loaded offline panel opens (null until it is ready)
 * and each environment's operations still queued in it.
 */
export function useQueuedEdits() {
  const [queue, setQueue] = useState<{ outbox: Outbox } | null>(null)
  const [pending, setPending] = useState<ReadonlyMap<string, readonly Operation[]>>(new Map())
  const onReady = useCallback((outbox: Outbox) => setQueue({ outbox }), [])
  const onPending = useCallback(
    (envId: string, operations: readonly Operation[]) =>
      setPending((before) => (before.get(envId) === operations ? before : new Map(before).set(envId, operations))),
    [],
  )
  return { outbox: queue?.outbox ?? null, pending, onReady, onPending }
}

/**
 * A flag's on/off switch through the flag writer: offline an update queued in
 * the outbox; online a PATCH, which an environment that requires approval
 * turns into a change request. A failure (the service's answer, or an outbox
 * that cannot be written) is `error`.
 */
export function useFlagToggle(live: LiveFlags, offline: boolean, outbox: Outbox | null) {
  const [error, setError] = useState<string | null>(null)
  async function toggle(env: Environment, flag: Flag) {
    setError(null)
    try {
      const writer = flagWriter({ queued: offline, outbox })
      const outcome = await writer.update(env.id, flag.key, { is_enabled: !flag.is_enabled }, flag.revision)
      if (outcome.kind === 'saved') for (const saved of outcome.flags) live.put(saved.envId, saved.flag)
      if (outcome.kind === 'requested')
        setError(`${env.name} requires approval: change request #${outcome.id} filed for ${flag.key}`)
    } catch (e) {
      setError(errorText(e))
    }
  }
  return { error, toggle }
}
