import type { Operation } from '@flagsync/protocol'
import { useCallback, useState } from 'react'
import { errorText } from './api.js'
import { flagWriter, type Outbox } from './flag-write.js'
import type { LiveFlags } from './live-flags.js'
import type { Environment, Flag } from './types.js'

/** How long an online write waits for the outbox (its code loads after the first render) before it gives up. */
const OPEN_WAIT_MS = 10_000

/**
 * The outbox the lazily loaded pending panel opens and each environment's
 * operations still queued in it. Offline it is null until it is open (what
 * cannot be queued says so); online every flag write goes through it too, so
 * until it is open a write waits for it rather than failing.
 */
export function useQueuedEdits(offline: boolean) {
  const [queue, setQueue] = useState<{ outbox: Outbox } | null>(null)
  const [opening] = useState(openingOutbox)
  const [pending, setPending] = useState<ReadonlyMap<string, readonly Operation[]>>(new Map())
  const onReady = useCallback(
    (outbox: Outbox) => {
      opening.open(outbox)
      setQueue({ outbox })
    },
    [opening],
  )
  const onPending = useCallback(
    (envId: string, operations: readonly Operation[]) =>
      setPending((before) => (before.get(envId) === operations ? before : new Map(before).set(envId, operations))),
    [],
  )
  const outbox = queue?.outbox ?? (offline ? null : opening.outbox)
  return { outbox, pending, onReady, onPending }
}

/** An outbox that hands each write to the real one once `open` is called. */
function openingOutbox() {
  let open: (outbox: Outbox) => void = () => {}
  const ready = new Promise<Outbox>((resolve) => {
    open = resolve
  })
  const outbox: Outbox = {
    async write(envId, operation, deliver) {
      let timer: ReturnType<typeof setTimeout> | undefined
      const gaveUp = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error('The outbox that sends flag edits did not open: reload the page and save again.')),
          OPEN_WAIT_MS,
        )
      })
      const opened = await Promise.race([ready, gaveUp]).finally(() => clearTimeout(timer))
      return opened.write(envId, operation, deliver)
    },
  }
  return { outbox, open: (o: Outbox) => open(o) }
}

/**
 * A flag's on/off switch through the flag writer: an update with the
 * revision the table shows as its base, queued offline, delivered at once
 * online, where an environment that requires approval turns it into a change
 * request. A failure (the service's answer, a conflict, or an outbox that
 * cannot be written) is `error`.
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
      if (outcome.kind === 'queued' && outcome.reason)
        setError(`${flag.key} in ${env.name} is queued: ${outcome.reason}. It is sent when the service answers.`)
    } catch (e) {
      setError(errorText(e))
    }
  }
  return { error, toggle }
}
