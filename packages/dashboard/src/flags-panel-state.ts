import type { Operation } from '@flagsync/protocol'
import { useCallback, useState } from 'react'
import { api, errorText } from './api.js'
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
 * A flag's on/off switch: offline an update queued in the outbox; online a
 * PATCH, which an environment that requires approval turns into a change request.
 */
export function useFlagToggle(live: LiveFlags, offline: boolean, outbox: Outbox | null) {
  const [error, setError] = useState<string | null>(null)
  async function toggle(env: Environment, flag: Flag) {
    setError(null)
    if (offline && outbox) {
      await outbox.update(env.id, flag.key, { is_enabled: !flag.is_enabled }, flag.revision)
      return
    }
    try {
      const result = await api<Flag | { id: number; status: string }>(
        'PATCH',
        `/api/environments/${env.id}/flags/${encodeURIComponent(flag.key)}`,
        { is_enabled: !flag.is_enabled },
      )
      if ('key' in result) live.put(env.id, result)
      else setError(`${env.name} requires approval: change request #${result.id} filed for ${flag.key}`)
    } catch (e) {
      setError(errorText(e))
    }
  }
  return { error, toggle }
}
