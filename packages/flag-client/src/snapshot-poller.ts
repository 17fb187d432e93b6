import type { parseSnapshot } from '@flagsync/protocol'
import type { ClientFlag, Clock } from './types.js'

/**
 * Polls the flag service's `/flags/snapshot` while the stream is down; the flag
 * client starts it after N failed reconnects and stops it when the stream is back.
 * It is loaded lazily: the caller passes the snapshot parser its own code already holds, so this chunk shares none.
 */
export class SnapshotPoller {
  #timer: unknown
  #running = false

  constructor(
    private readonly url: string,
    private readonly headers: Record<string, string>,
    private readonly fetchImpl: typeof fetch,
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly onSnapshot: (flags: Map<string, ClientFlag>) => void,
    private readonly onError: (error: Error) => void,
    private readonly parse: typeof parseSnapshot,
  ) {}

  get active(): boolean {
    return this.#running
  }

  start(): void {
    if (this.#running) return
    this.#running = true
    void this.#poll()
  }

  stop(): void {
    this.#running = false
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer)
    this.#timer = undefined
  }

  async #poll(): Promise<void> {
    if (!this.#running) return
    try {
      const res = await this.fetchImpl(this.url, { headers: { Accept: 'application/json', ...this.headers } })
      if (!res.ok) throw new Error(`snapshot answered ${res.status}`)
      const flags = this.parse(await res.json())
      if (!flags) throw new Error('snapshot is not an array of flags')
      if (this.#running) this.onSnapshot(new Map(flags.map((f) => [f.key, f as ClientFlag])))
    } catch (error) {
      this.onError(error instanceof Error ? error : new Error(String(error)))
    }
    if (this.#running) this.#timer = this.clock.setTimeout(() => void this.#poll(), this.intervalMs)
  }
}

/** The snapshot takes the key the same way the stream does: in the query when `sdkKeyInQuery` is set. */
export function withKeyInQuery(url: string, sdkKey: string | undefined): string {
  if (!sdkKey) return url
  const withKey = new URL(url)
  withKey.searchParams.set('sdk_key', sdkKey)
  return withKey.toString()
}
