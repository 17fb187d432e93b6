import {
  connectedDataSchema,
  DASHBOARD_STREAM_EVENTS,
  environmentOrderEventSchema,
  STREAM_EVENTS,
  streamUpdateSchema,
} from '@flagsync/protocol'
import { followSessionEvents, type SessionEvents } from './session-events.js'
import type { Flag } from './types.js'

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'cached'

/** environment id → flag key → flag, as the stream last said (SDK view: segments expanded). */
export type FlagsByEnv = ReadonlyMap<string, ReadonlyMap<string, Flag>>

export interface LiveSnapshot {
  state: LiveState
  flags: FlagsByEnv
}

/** Where the stream's flags are kept between visits (the query cache, which the persister saves). */
export interface FlagStore {
  read(): FlagsByEnv | undefined
  write(flags: FlagsByEnv): void
}

type Source = Pick<EventSource, 'addEventListener' | 'close'> & { onerror: EventSource['onerror'] }

/**
 * The flags of a project's environments as the service's dashboard stream
 * (`GET /stream?environment_id=…` with the session cookie) sends them: a
 * bootstrap per connection (or, on a reconnect, only what it missed), then every change anyone makes, within the
 * stream's latency. React reads it through useSyncExternalStore; snapshots
 * are immutable, so a render sees one consistent state. The flags go to
 * `store` too (the query cache, persisted), so the table shows what it last saw when offline.
 *
 * The same connection carries the project's `environments` event (someone
 * reordered them) and `people` (someone's role, name or password changed): one stream per dashboard tab, not one
 * per concern, since
 * HTTP/1.1 browsers allow six connections per origin across all tabs.
 */
export class LiveFlags {
  private snapshot: LiveSnapshot
  private readonly listeners = new Set<() => void>()
  private source: Source | undefined
  private pending: Map<string, Map<string, Flag>> | undefined
  private readonly orderListeners = new Set<{ projectId: string; listener: (environmentIds: string[]) => void }>()
  private readonly sessionListeners = new Set<SessionEvents>()

  constructor(
    private readonly environmentIds: readonly string[],
    private readonly store: FlagStore,
    private readonly open: (url: string) => Source = (url) => new EventSource(url),
  ) {
    const saved = store.read()
    this.snapshot = {
      state: 'connecting',
      flags: new Map(environmentIds.map((id) => [id, saved?.get(id) ?? new Map()])),
    }
  }

  start(): void {
    if (this.source || this.environmentIds.length === 0) return
    const url = `/stream?environment_id=${this.environmentIds.map(encodeURIComponent).join(',')}`
    const source = this.open(url)
    this.source = source
    source.addEventListener(STREAM_EVENTS.connected, (event) => {
      if (!connectedDataSchema.safeParse(parse((event as MessageEvent).data)).success) return
      // A full bootstrap: collect it, then swap at ready, so the table never flashes empty.
      this.pending = new Map(this.environmentIds.map((id) => [id, new Map()]))
    })
    source.addEventListener(STREAM_EVENTS.resumed, () => {
      // EventSource reconnected with its last id and the service sends only what was missed, then ready: onto a
      // bootstrap cut off midway (its updates reached that id), else onto the flags shown.
      this.pending ??= new Map(this.environmentIds.map((id) => [id, new Map(this.snapshot.flags.get(id))]))
    })
    source.addEventListener(STREAM_EVENTS.update, (event) => {
      const update = streamUpdateSchema.safeParse(parse((event as MessageEvent).data))
      if (!update.success || !update.data.env_id) return
      const env = update.data.env_id
      if (this.pending) {
        const flags = this.pending.get(env) ?? new Map()
        if (update.data.type === 'UPSERT') flags.set(update.data.flag.key, update.data.flag as Flag)
        else flags.delete(update.data.key)
        this.pending.set(env, flags)
        return
      }
      if (update.data.type === 'UPSERT') this.put(env, update.data.flag as Flag)
      else this.remove(env, update.data.key)
    })
    source.addEventListener(STREAM_EVENTS.ready, () => {
      const flags = this.pending ?? new Map()
      this.pending = undefined
      this.set({ state: 'live', flags })
    })
    source.addEventListener(DASHBOARD_STREAM_EVENTS.environments, (event) => {
      const order = environmentOrderEventSchema.safeParse(parse((event as MessageEvent).data))
      if (!order.success) return
      for (const { projectId, listener } of this.orderListeners)
        if (projectId === order.data.project_id) listener(order.data.environment_ids)
    })
    // The same connection carries people changes and tells when it drops (the session may have ended).
    followSessionEvents(source, () => this.sessionListeners)
    source.onerror = () => {
      if (this.snapshot.state !== 'connecting') this.set({ ...this.snapshot, state: 'reconnecting' })
    }
  }

  stop(): void {
    this.source?.close()
    this.source = undefined
  }

  /**
   * The service answers again: a stream that is not live connects now instead of after EventSource's retry
   * delay, so what changed meanwhile (the outbox's delivered edits included) reaches the table and the editable
   * copy before the next edit takes its base revision from them.
   */
  reconnect(): void {
    if (!this.source || this.snapshot.state === 'live') return
    this.stop()
    this.start()
  }

  /** A flag as a write of this page answered it: shown at once, the stream's copy follows. */
  put(envId: string, flag: Flag): void {
    const flags = new Map(this.snapshot.flags)
    flags.set(envId, new Map(flags.get(envId)).set(flag.key, flag))
    this.set({ ...this.snapshot, flags })
  }

  remove(envId: string, key: string): void {
    const envFlags = new Map(this.snapshot.flags.get(envId))
    if (!envFlags.delete(key)) return
    const flags = new Map(this.snapshot.flags)
    flags.set(envId, envFlags)
    this.set({ ...this.snapshot, flags })
  }

  /** Calls `listener` with the project's environment ids whenever someone reorders them; returns the unsubscribe. */
  onEnvironmentOrder(projectId: string, listener: (environmentIds: string[]) => void): () => void {
    const entry = { projectId, listener }
    this.orderListeners.add(entry)
    return () => this.orderListeners.delete(entry)
  }

  /** Hands this stream's people events and failures to the signed-in shell; returns the unsubscribe. */
  onSessionEvents(events: SessionEvents): () => void {
    this.sessionListeners.add(events)
    return () => this.sessionListeners.delete(events)
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  getSnapshot = (): LiveSnapshot => this.snapshot

  private set(next: LiveSnapshot): void {
    if (next.flags !== this.snapshot.flags) this.store.write(next.flags)
    this.snapshot = next
    for (const listener of this.listeners) listener()
  }
}

function parse(data: unknown): unknown {
  try {
    return typeof data === 'string' ? JSON.parse(data) : undefined
  } catch {
    return undefined
  }
}
