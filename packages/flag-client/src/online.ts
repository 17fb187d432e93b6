import type { OnlineSource } from './types.js'

interface EventTargetLike {
  addEventListener(type: string, listener: () => void): void
  removeEventListener(type: string, listener: () => void): void
}

/**
 * `navigator.onLine` and the window's `online`/`offline` events, read when
 * asked and subscribed only while someone listens (nothing happens at import).
 * Where there is no `navigator.onLine` (Node), it reports online.
 */
export function browserOnlineSource(): OnlineSource {
  return {
    isOnline() {
      const nav = (globalThis as { navigator?: { onLine?: unknown } }).navigator
      return typeof nav?.onLine === 'boolean' ? nav.onLine : true
    },
    subscribe(listener) {
      const target = globalThis as EventTargetLike
      // Typed as present; checked because a worker or Node may lack them.
      if (typeof target.addEventListener !== 'function' || typeof target.removeEventListener !== 'function') {
        return () => {}
      }
      const online = (): void => listener(true)
      const offline = (): void => listener(false)
      target.addEventListener('online', online)
      target.addEventListener('offline', offline)
      return () => {
        target.removeEventListener('online', online)
        target.removeEventListener('offline', offline)
      }
    },
  }
}

/** An online source you drive yourself (Node, tests, or an app with its own connectivity check). */
export interface ManualOnlineSource extends OnlineSource {
  /** Sets the state; subscribers hear only real changes. */
  setOnline(online: boolean): void
}

/**
 * An online source that starts `initial` (default online) and changes only when told.
 *
 * @example
 * ```ts
 * const online = manualOnlineSource()
 * const flags = createFlagClient({ streamUrl, online })
 * online.setOnline(false) // pauses reconnects until setOnline(true)
 * ```
 */
export function manualOnlineSource(initial = true): ManualOnlineSource {
  let online = initial
  const listeners = new Set<(online: boolean) => void>()
  return {
    isOnline: () => online,
    subscribe(listener) {
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
      }
    },
    setOnline(next) {
      if (next === online) return
      online = next
      for (const listener of [...listeners]) listener(next)
    },
  }
}
