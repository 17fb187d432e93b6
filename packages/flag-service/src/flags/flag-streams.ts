import type { IncomingMessage, ServerResponse } from 'node:http'
import { type SseConnection, SseHub } from '@flagsync/server-kit'
import { ChangeFeed, type FlagChange, LiveFlagSet, type StoredFlag, withRevision } from '@flagsync/store'
import { ACCESS_SCOPE } from '../auth/revocations.js'
import { ENVIRONMENT_ORDER_SCOPE } from '../environment-order.js'
import { UUID_PATTERN } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { coalescedRun } from './coalesced-run.js'
import { buildEnvironmentView, type EnvironmentView } from './environment-view.js'
import {
  expandFlag,
  isSegmentScope,
  projectOfSegmentScope,
  referencesSegments,
  type SegmentLookup,
  segmentKeysOf,
  segmentScope,
} from './expand.js'
import type { EnvironmentRef, FlagStreamOptions } from './flag-stream-options.js'
import { startMaintenance } from './maintenance.js'
import type { SegmentRule } from './model.js'
import { connectedFrame, deleteFrame, environmentsFrame, readyFrame, upsertFrame } from './stream-frames.js'
import { closeRevokedStreams } from './stream-revalidation.js'

export type { EnvironmentRef, FlagStreamOptions } from './flag-stream-options.js'

/** The hub scope of dashboard (session or token) connections; SDK-key connections use their environment id. */
const DASHBOARD_SCOPE = 'dashboard'

/**
 * The flag service's streaming side, one per process: the change feed
 * (in-process fast path, PostgreSQL LISTEN and a poll backstop), the live set
 * of every environment's flags and every project's segments, and the SSE hub.
 *
 * Every change is applied to the live set and broadcast in the same
 * synchronous step, and a new connection's bootstrap is built from the live
 * set and subscribed in one synchronous step too, so no change can fall
 * between a bootstrap and the first live update.
 */
export class FlagStreams {
  /** Entries' JSON carries each flag's read-only `revision`, the base of conflict checks: every stream and snapshot flag has it. */
  readonly live = new LiveFlagSet({ revisionInJson: true })
  readonly hub: SseHub
  readonly feed: ChangeFeed
  private readonly runtime: ServiceRuntime
  private readonly options: FlagStreamOptions
  /** Project of each environment a connection or snapshot has asked for (environments never change project). */
  private readonly projectOf = new Map<string, string>()
  private readonly views = new Map<string, EnvironmentView>()
  /** Dashboard connections by environment they follow. */
  private readonly dashboards = new Map<string, Set<SseConnection>>()
  /** The SDK key behind each SDK connection, and the check of each dashboard connection's access. */
  private readonly keyOf = new Map<SseConnection, number>()
  private readonly accessOf = new Map<SseConnection, () => Promise<boolean>>()
  /** Environments each dashboard connection follows, and how follow-everything ones list what their user sees now. */
  private readonly followedBy = new Map<SseConnection, Set<string>>()
  private readonly followingAll = new Map<SseConnection, () => Promise<EnvironmentRef[]>>()
  /** Environments this process has seen a flag of (initial load or a change): a new one may be news to dashboards. */
  private readonly seenEnvironments = new Set<string>()
  private revalidateTimer: ReturnType<typeof setInterval> | undefined
  private starting: Promise<void> | undefined
  private pruneTimer: ReturnType<typeof setInterval> | undefined
  private closed = false

  constructor(runtime: ServiceRuntime, options: FlagStreamOptions = {}) {
    this.runtime = runtime
    this.options = options
    this.hub = new SseHub({
      keepAliveMs: options.keepAliveMs ?? 15_000,
      maxBufferedBytes: options.maxStreamBufferBytes,
      maxConnections: options.maxStreamConnections,
      retryMs: options.streamRetryMs,
    })
    this.feed = new ChangeFeed(runtime.store, {
      pollIntervalMs: options.pollIntervalMs ?? 1000,
      onError: (err) => runtime.logger.warn({ err }, 'change feed: could not read the change log; retrying'),
    })
    this.feed.onChanges((changes) => this.apply(changes))
    this.feed.onReset(() => {
      // Fell behind a pruned log: reload, then make every subscriber reconnect and rebuild.
      void this.runtime.store
        .loadAll()
        .then(({ rows, revision }) => {
          this.live.replaceAll(rows.filter(relevant), revision)
          this.views.clear()
          this.hub.closeAll()
        })
        .catch((err) => this.runtime.logger.warn({ err }, 'could not reload the flags after a change-log gap'))
    })
  }

  /** Loads the live set and starts following the change log (once; retried after a failure). */
  ready(): Promise<void> {
    if (!this.starting) {
      this.starting = this.start().catch((error) => {
        this.starting = undefined
        throw error
      })
    }
    return this.starting
  }

  /**
   * Ready, and caught up with the change log: a connection or snapshot on this
   * instance then includes every change committed anywhere before it was asked
   * for, not only what the last poll brought. Concurrent calls share one query.
   */
  async current(): Promise<void> {
    await this.ready()
    await this.feed.catchUp()
  }

  /** Committed changes of this process (`runtime.onFlagChanges`): applied and broadcast before the write resolves. */
  async ingest(changes: FlagChange[]): Promise<void> {
    if (!this.starting || this.closed) return // not started: the changes are in the initial load
    try {
      await this.starting
    } catch {
      return
    }
    await this.feed.ingest(changes)
  }

  /**
   * A HEAD of /stream: the status and headers a GET would get (503 past the
   * cap), no body, nothing registered or counted (SseHub.open's HEAD rule).
   */
  answerHead(req: IncomingMessage, res: ServerResponse): void {
    this.hub.open(req, res)
  }

  /** Opens an SDK-key stream on the key's environment: connected, bootstrap, ready, then live updates. */
  openEnvironmentStream(
    req: IncomingMessage,
    res: ServerResponse,
    key: { id: number; environmentId: string; projectId: string },
  ): void {
    const view = this.view(key.environmentId, key.projectId)
    const conn = this.hub.open(req, res, key.environmentId)
    this.keyOf.set(conn, key.id)
    res.on('close', () => this.keyOf.delete(conn))
    conn.writeBootstrap(view.bootstrap)
  }

  /**
   * Opens a dashboard stream (session or token): `connected` with a null
   * environment, the flags of every listed environment (each update names its
   * `env_id`), `ready` with the total, then their live updates. With
   * `visibleNow` (a connection that follows everything its user can see) it
   * also picks up environments that become visible later: see `followNew`.
   */
  openDashboardStream(
    req: IncomingMessage,
    res: ServerResponse,
    environments: readonly EnvironmentRef[],
    stillAllowed: () => Promise<boolean>,
    visibleNow?: () => Promise<EnvironmentRef[]>,
  ): void {
    const views = environments.map((env) => this.view(env.id, env.projectId))
    const conn = this.hub.open(req, res, DASHBOARD_SCOPE)
    this.accessOf.set(conn, stillAllowed)
    const following = new Set<string>()
    this.followedBy.set(conn, following)
    for (const env of environments) this.follow(conn, following, env.id)
    if (visibleNow) this.followingAll.set(conn, visibleNow)
    res.on('close', () => {
      this.accessOf.delete(conn)
      this.followingAll.delete(conn)
      this.followedBy.delete(conn)
      for (const id of following) {
        const set = this.dashboards.get(id)
        set?.delete(conn)
        if (set?.size === 0) this.dashboards.delete(id)
      }
    })
    // Each environment's shared frames by reference: a dashboard costs no copy of them. All of it is the
    // bootstrap, so however large the environments are, the cap counts only the updates queued after it.
    conn.writeBootstrap(connectedFrame(null))
    let count = 0
    for (const view of views) {
      conn.writeBootstrap(view.updates)
      count += view.count
    }
    conn.writeBootstrap(readyFrame(count))
  }

  /**
   * Dashboards that follow everything their user can see add the environments
   * that became visible since they connected (a new project, a new membership):
   * the environment's current flags are sent and its updates follow, in one
   * synchronous step as at connect. Runs after the first flag of an environment
   * this process had not seen (a new project's) when such a dashboard does not
   * follow it, and on every revalidation (memberships); concurrent
   * calls share one run, and one more runs after it if asked meanwhile.
   */
  followNew(): Promise<void> {
    return this.followNewRun()
  }

  private readonly followNewRun = coalescedRun(
    () => this.followNewOnce(),
    () => this.closed,
  )

  private async followNewOnce(): Promise<void> {
    for (const [conn, visibleNow] of [...this.followingAll]) {
      const environments = await visibleNow().catch(() => [])
      const following = this.followedBy.get(conn)
      if (!following) continue // closed meanwhile
      for (const env of environments) {
        if (following.has(env.id)) continue
        // A bootstrap too: a large environment cannot make the cap drop a stream that is reading.
        conn.writeBootstrap(this.view(env.id, env.projectId).updates)
        this.follow(conn, following, env.id)
      }
    }
  }

  private follow(conn: SseConnection, following: Set<string>, environmentId: string): void {
    following.add(environmentId)
    let set = this.dashboards.get(environmentId)
    if (!set) {
      set = new Set()
      this.dashboards.set(environmentId, set)
    }
    set.add(conn)
  }

  /** The segment-expanded flags of an environment as a JSON array, with a strong ETag. */
  snapshot(environmentId: string, projectId: string): { body: Buffer; etag: string } {
    const view = this.view(environmentId, projectId)
    return { body: view.snapshot, etag: view.etag }
  }

  /**
   * Closes the streams whose access ended: SDK keys that no longer exist (one
   * query for all of them), dashboard connections whose check fails. A check
   * that cannot run (database down) keeps the stream. Then follow-everything
   * dashboards pick up what became visible (`followNew`). Resolves how many closed.
   */
  async revalidate(): Promise<number> {
    const closed = await closeRevokedStreams(this.runtime, this.keyOf, this.accessOf)
    await this.followNew()
    return closed
  }

  /**
   * `revalidate` soon, once however many revocations arrive meanwhile (one
   * more run if any arrive while it runs, so none is missed).
   */
  revalidateSoon(): Promise<void> {
    return this.revalidateSoonRun()
  }

  private readonly revalidateSoonRun = coalescedRun(
    () => this.revalidate(),
    () => this.closed,
    (err) => this.runtime.logger.warn({ err }, 'could not re-check open streams after a revocation'),
  )

  async close(): Promise<void> {
    this.closed = true
    if (this.pruneTimer) clearInterval(this.pruneTimer)
    if (this.revalidateTimer) clearInterval(this.revalidateTimer)
    this.hub.stop()
    await this.feed.close()
  }

  private async start(): Promise<void> {
    const initial = await this.runtime.store.loadAll()
    if (this.closed) return
    this.live.replaceAll(initial.rows.filter(relevant), initial.revision)
    for (const row of initial.rows) if (UUID_PATTERN.test(row.scope)) this.seenEnvironments.add(row.scope)
    await this.feed.start(initial.revision)
    if (this.closed) {
      await this.feed.close()
      return
    }
    this.pruneTimer = startMaintenance(this.runtime, this.options.changeRetentionMs)
    const revalidateMs = this.options.revalidateMs ?? 60_000
    if (revalidateMs > 0) {
      this.revalidateTimer = setInterval(() => void this.revalidate(), revalidateMs)
      this.revalidateTimer.unref()
    }
  }

  private segments(projectId: string): SegmentLookup {
    const scope = segmentScope(projectId)
    return (key) => this.live.get(key, scope)?.flag.rules as SegmentRule[] | undefined
  }

  private view(environmentId: string, projectId: string): EnvironmentView {
    this.projectOf.set(environmentId, projectId)
    const cached = this.views.get(environmentId)
    if (cached) return cached
    const view = buildEnvironmentView(this.live, environmentId, projectId, this.segments(projectId))
    this.views.set(environmentId, view)
    return view
  }

  /** Whether a follow-everything dashboard does not follow this environment (yet). */
  private someoneMisses(environmentId: string): boolean {
    for (const conn of this.followingAll.keys()) if (!this.followedBy.get(conn)?.has(environmentId)) return true
    return false
  }

  private hasSubscribers(environmentId: string): boolean {
    return this.hub.size(environmentId) > 0 || (this.dashboards.get(environmentId)?.size ?? 0) > 0
  }

  private send(environmentId: string, frame: string): void {
    const bytes = Buffer.from(frame)
    this.hub.broadcast(bytes, environmentId)
    const dashboards = this.dashboards.get(environmentId)
    if (dashboards) for (const conn of dashboards) conn.write(bytes)
  }

  private apply(changes: FlagChange[]): void {
    for (const change of changes) {
      if (isSegmentScope(change.scope)) this.applySegment(change)
      else if (UUID_PATTERN.test(change.scope)) this.applyFlag(change)
      else if (change.scope === ACCESS_SCOPE) void this.revalidateSoon()
      else if (change.scope === ENVIRONMENT_ORDER_SCOPE) this.applyEnvironmentOrder(change)
    }
  }

  /** A project's environments were reordered: dashboards following any of them get the new order. */
  private applyEnvironmentOrder(change: FlagChange): void {
    const ids = change.flag?.environment_ids
    const projectId = change.flag?.project_id
    if (!Array.isArray(ids) || typeof projectId !== 'string') return
    const frame = Buffer.from(environmentsFrame(projectId, ids, change.revision))
    for (const [conn, following] of this.followedBy) {
      if (ids.some((id) => following.has(String(id)))) conn.write(frame)
    }
  }

  private applyFlag(change: FlagChange): void {
    const env = change.scope
    this.live.apply(change)
    this.views.delete(env)
    // Only an environment's first flag can be news to a follow-everything dashboard (a new project's);
    // one it already could not see stays invisible until a membership changes, which revalidation picks up.
    if (!this.seenEnvironments.has(env)) {
      this.seenEnvironments.add(env)
      if (this.followingAll.size > 0 && this.someoneMisses(env)) void this.followNew()
    }
    if (!this.hasSubscribers(env)) return
    if (!change.flag || change.json === null) {
      this.send(env, deleteFrame(env, change.key, change.revision))
      return
    }
    const projectId = this.projectOf.get(env)
    const json =
      projectId !== undefined && referencesSegments(change.flag)
        ? withRevision(JSON.stringify(expandFlag(change.flag, this.segments(projectId))), change.revision)
        : withRevision(change.json, change.revision)
    this.send(env, upsertFrame(env, json, change.revision))
  }

  /**
   * A segment changed: every flag referencing it, in every environment of the
   * project with subscribers, is sent again if what SDKs see of it changed
   * (a renamed segment changes nothing they evaluate).
   */
  private applySegment(change: FlagChange): void {
    const projectId = projectOfSegmentScope(change.scope)
    const affected: Array<{ env: string; flag: StoredFlag; revision: number; before: string }> = []
    const lookup = this.segments(projectId)
    for (const [env, project] of this.projectOf) {
      if (project !== projectId) continue
      this.views.delete(env)
      if (!this.hasSubscribers(env)) continue
      for (const entry of this.live.list(env)) {
        if (segmentKeysOf(entry.flag).has(change.key)) {
          affected.push({
            env,
            flag: entry.flag,
            revision: entry.revision,
            before: JSON.stringify(expandFlag(entry.flag, lookup)),
          })
        }
      }
    }
    this.live.apply(change)
    for (const { env, flag, revision, before } of affected) {
      const after = JSON.stringify(expandFlag(flag, lookup))
      // The flag's own revision in its JSON (it did not change); the event id is the segment change's.
      if (after !== before) this.send(env, upsertFrame(env, withRevision(after, revision), change.revision))
    }
  }
}

/** Rows this feature serves: environments (UUID scopes) and segments; the flat API's scope '' is not ours. */
function relevant(row: { scope: string }): boolean {
  return isSegmentScope(row.scope) || UUID_PATTERN.test(row.scope)
}
