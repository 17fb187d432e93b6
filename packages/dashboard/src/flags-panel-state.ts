import type { Operation } from '@flagsync/protocol'
import { useCallback, useEffect, useState } from 'react'
import { errorText } from './api.js'
import { flagWriter, type Outbox } from './flag-write.js'
import type { LiveFlags } from './live-flags.js'
import type { Environment, Flag } from './types.js'

/** How long an online write waits for the outbox (its code loads after the first render) before it gives up. */
const OPEN_WAIT_MS = 10_000
/** How long a delivered write waits for the table to stop showing it as queued. */
const SETTLE_WAIT_MS = 2_000

type Pending = ReadonlyMap<string, readonly Operation[]>

/**
 * The outbox the lazily loaded pending panel opens and each environment's
 * operations still queued in it. Offline it is null until it is open (what
 * cannot be queued says so); online every flag write goes through it too, so
 * until it is open a write waits for it rather than failing.
 */
export function useQueuedEdits(offline: boolean) {
  const [open, setOpen] = useState(false)
  const [panel] = useState(panelOutbox)
  const [pending, setPending] = useState<Pending>(new Map())
  const onReady = useCallback(
    (outbox: Outbox) => {
      panel.open(outbox)
      setOpen(true)
    },
    [panel],
  )
  const onPending = useCallback(
    (envId: string, operations: readonly Operation[]) =>
      setPending((before) => (before.get(envId) === operations ? before : new Map(before).set(envId, operations))),
    [],
  )
  // After the commit: a write waiting for its edit to leave the table sees the table as it is on screen.
  useEffect(() => panel.shown(pending), [panel, pending])
  return { outbox: open || !offline ? panel.outbox : null, pending, onReady, onPending }
}

/**
 * The outbox the panel hands out: each write goes to the real one once it is
 * open, and a delivered write resolves once the table no longer shows the
 * edit as queued, so its outcome (a change request, a conflict, a refusal) is
 * never shown beside a row that still has the edit on top.
 */
function panelOutbox() {
  let open: (outbox: Outbox) => void = () => {}
  const ready = new Promise<Outbox>((resolve) => {
    open = resolve
  })
  let pending: Pending = new Map()
  const listeners = new Set<() => void>()
  const queued = (envId: string, key: string) => pending.get(envId)?.some((op) => op.recordId === key) ?? false
  const left = (envId: string, key: string) =>
    new Promise<void>((resolve) => {
      const done = () => {
        listeners.delete(check)
        clearTimeout(timer)
        resolve()
      }
      const check = () => {
        if (!queued(envId, key)) done()
      }
      const timer = setTimeout(done, SETTLE_WAIT_MS)
      listeners.add(check)
      check()
    })
  const outbox: Outbox = {
    async write(envId, operation, deliver) {
      const delivery = await (await opened(ready)).write(envId, operation, deliver)
      if (deliver && delivery.kind !== 'queued') await left(envId, operation.recordId)
      return delivery
    },
  }
  return {
    outbox,
    open: (o: Outbox) => open(o),
    shown(now: Pending) {
      pending = now
      for (const listener of [...listeners]) listener()
    },
  }
}

async function opened(ready: Promise<Outbox>): Promise<Outbox> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const gaveUp = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error('The outbox that sends flag edits did not open: reload the page and save again.')),
      OPEN_WAIT_MS,
    )
  })
  return Promise.race([ready, gaveUp]).finally(() => clearTimeout(timer))
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
