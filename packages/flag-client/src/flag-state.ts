import { FlagCache, type SavedSet } from './flag-cache.js'
import { bootstrapSet, isNewerFlagSet } from './flag-sets.js'
import { resolveIndexedDb, resolveLocalStorage } from './indexeddb-env.js'
import { LocalView } from './local-view.js'
import type { ClientFlag, Clock, FlagClientListener, FlagClientOptions, FlagClientStatus, FlagSource } from './types.js'

/**
 * What a flag client shows: its view (server flags with local edits on top), its status and its listeners. Every
 * source (stream, snapshot, cache, bootstrap) hands its set to `useSet`; the cache is kept here too.
 */
export interface FlagState {
  readonly local: LocalView
  /** Replaced, never mutated: a listener may keep the object it was given. */
  status: FlagClientStatus
  readonly listeners: Set<FlagClientListener>
  readonly ready: Promise<void>
  emit(event: Parameters<FlagClientListener>[0]): void
  setStatus(patch: Partial<FlagClientStatus>): void
  /** Applies a change to the view and tells listeners which keys now read differently. */
  changed(mutate: () => string[]): void
  /** `connectedAt`: the set is a stream bootstrap, which holds every edit acknowledged before it. */
  useSet(flags: Map<string, ClientFlag>, source: FlagSource, connectedAt?: number): void
  persistSoon(): void
  /** The flag cache (`<dbName>:flags`), unless `persist: false` or there is no storage. */
  readonly cache: FlagCache | undefined
  /** Runs `closing`, saves an authoritative set and closes the cache, then reports `closed`. */
  close(closing: () => Promise<unknown>): Promise<void>
}

/**
 * The flag client's state, with its cache (`<dbName>:flags`) unless `persist: false`; `loadSets` fills it.
 * @example
 * const state = flagState(options, url, clock)
 * state.useSet(flags, 'snapshot')
 */
export function flagState(options: FlagClientOptions, url: URL, clock: Clock): FlagState {
  const echoTimeoutMs = options.echoTimeoutMs ?? 30_000
  const cacheDb = options.persist === false ? undefined : resolveIndexedDb(options)
  const storage = options.persist === false ? undefined : resolveLocalStorage(options)
  const cache =
    cacheDb || storage
      ? new FlagCache(`${options.dbName ?? 'flagsync'}:flags`, url.toString(), cacheDb, storage)
      : undefined
  let persistTimer: unknown
  let resolveReady!: () => void
  const save = () => cache?.save([...s.local.serverFlags.values()], s.status.environmentId, clock.now()).catch(() => {})
  // Only the server's own sets are saved: one read from the cache already is, and a bootstrap names no environment.
  const authoritative = () => s.status.source === 'stream' || s.status.source === 'snapshot'
  const s: FlagState = {
    cache,
    local: new LocalView(options.collection ?? 'flags'),
    status: { state: 'connecting', source: 'none', environmentId: null, failures: 0, lastError: null },
    listeners: new Set(),
    ready: new Promise<void>((resolve) => {
      resolveReady = resolve
    }),
    emit(event) {
      for (const listener of s.listeners) listener(event)
    },
    setStatus(patch) {
      s.status = { ...s.status, ...patch }
      s.emit({ type: 'status', status: s.status })
    },
    changed(mutate) {
      const now = clock.now()
      const expired = s.local.dropAcked((a) => now - a.ackedAt >= echoTimeoutMs)
      const changedKeys = [...new Set([...expired, ...mutate()])]
      if (changedKeys.length > 0) s.emit({ type: 'flags', changedKeys })
    },
    useSet(flags, source, connectedAt) {
      s.changed(() => [
        ...(connectedAt === undefined ? [] : s.local.dropAcked((a) => a.ackedAt <= connectedAt)),
        ...s.local.replaceServer(flags),
      ])
      s.setStatus({ source })
      if (authoritative()) s.persistSoon()
      resolveReady()
    },
    persistSoon() {
      if (!cache || persistTimer !== undefined) return
      persistTimer = clock.setTimeout(() => {
        persistTimer = undefined
        void save()
      }, 50)
    },
    async close(closing) {
      if (persistTimer !== undefined) clock.clearTimeout(persistTimer)
      await closing()
      // Only an authoritative set is saved: closing before anything arrived must not wipe the cache.
      if (authoritative()) await save()
      cache?.close()
      s.setStatus({ state: 'closed' })
      s.listeners.clear()
    },
  }
  return s
}

/**
 * Shows the bootstrap, then the cached set (`environmentKnown` hears its environment), then calls `attach`: the
 * localStorage copy answers at once, IndexedDB once it has opened.
 */
export function loadSets(
  s: FlagState,
  options: FlagClientOptions,
  environmentKnown: (environmentId: string | null) => void,
  attach: () => void,
): void {
  /** The cached set replaces nothing but a bootstrap it is newer than (a server-rendered page keeps its flags). */
  const fromCache = (saved: SavedSet | undefined) => {
    if (!saved || (s.status.source !== 'none' && s.status.source !== 'bootstrap')) return
    // The stream URL's environment, whichever set is served: impressions can be addressed before the stream.
    environmentKnown(saved.environmentId)
    if (s.status.source === 'none' || isNewerFlagSet(saved.flags, s.local.serverFlags.values())) {
      s.useSet(new Map(saved.flags.map((f) => [f.key, f])), 'cache')
    }
  }
  const bootstrap = bootstrapSet(options.bootstrap)
  if (bootstrap) s.useSet(bootstrap, 'bootstrap')
  const { cache } = s
  const saved = cache?.loadNow()
  if (cache && !saved) {
    void cache
      .load()
      .then(fromCache)
      .catch(() => {})
      .then(attach)
  } else {
    fromCache(saved)
    attach()
  }
}
