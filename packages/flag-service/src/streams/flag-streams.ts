import type { IncomingMessage, ServerResponse } from 'node:http'
import { CredentialStreams, openStream, SseHub, type StreamScope } from '@flagsync/server-kit'
import { ChangeFeed, type FlagChange, LiveFlagSet, type StoredFlag, withRevision } from '@flagsync/store'
import { ACCESS_SCOPE } from '../auth/revocations.js'
import { ENVIRONMENT_ORDER_SCOPE } from '../environments/order.js'
import {
  expandFlag,
  isSegmentScope,
  projectOfSegmentScope,
  referencesSegments,
  type SegmentLookup,
  segmentKeysOf,
  segmentScope,
} from '../flags/expand.js'
import type { SegmentRule } from '../flags/model.js'
import { UUID_PATTERN } from '../schemas.js'
import { startMaintenance } from '../segments/maintenance.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { PEOPLE_SCOPE } from '../users/events.js'
import { coalescedRun } from './coalesced-run.js'
import { DashboardFollows } from './dashboard-follows.js'
import { buildEnvironmentView, dashboardBootstrap, type EnvironmentView } from './environment-view.js'
import { deleteFrame, environmentsFrame, peopleFrame, upsertFrame } from './frames.js'
import type { EnvironmentRef, FlagStreamOptions } from './options.js'
import { type ResumeScope, readScopeChanges, resumeFrames } from './resume.js'
import { closeRevokedStreams } from './revalidation.js'

export type { EnvironmentRef, FlagStreamOptions } from './options.js'

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
  private readonly dashboards = new DashboardFollows()
  /**
   * The SDK key behind each open SDK stream: `/stream` and OFREP refresh streams (`track` their `res`), closed
   * together when their key is deleted.
   */
  readonly sdkKeyStreams = new CredentialStreams<number>()
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

  /**
   * Opens an SDK-key stream on the key's environment: connected, bootstrap,
   * ready, then live updates; or, for a `Last-Event-ID` the change log still
   * covers, `resumed`, the updates missed, ready (`resume.ts`).
   */
  async openEnvironmentStream(
    req: IncomingMessage,
    res: ServerResponse,
    key: { id: number; environmentId: string; projectId: string },
  ): Promise<void> {
    const env = { id: key.environmentId, projectId: key.projectId }
    this.projectOf.set(env.id, env.projectId) // live updates of a resumed stream are expanded too
    await openStream(this.hub, req, res, {
      ...this.resumable({ environments: [env], dashboard: false }),
      hubScope: env.id,
      bootstrap: () => this.view(env.id, env.projectId).bootstrap,
      onOpen: (conn) => this.sdkKeyStreams.track(conn.res, key.id),
    })
  }

  /**
   * Opens a dashboard stream (session or token): `connected` with a null
   * environment, the flags of every listed environment (each update names its
   * `env_id`) in revision order, `ready` with the total, then their live
   * updates. A stream that named its environments resumes like an SDK one.
   * With `visibleNow` (a connection that follows everything its user can see)
   * it also picks up environments that become visible later (`followNew`),
   * and always starts with a full bootstrap: what its user sees may have
   * grown while it was away.
   */
  async openDashboardStream(
    req: IncomingMessage,
    res: ServerResponse,
    environments: readonly EnvironmentRef[],
    stillAllowed: () => Promise<boolean>,
    visibleNow?: () => Promise<EnvironmentRef[]>,
  ): Promise<void> {
    for (const env of environments) this.projectOf.set(env.id, env.projectId)
    await openStream(this.hub, req, res, {
      ...(visibleNow ? {} : this.resumable({ environments, dashboard: true })),
      revision: () => this.feed.revision,
      hubScope: DASHBOARD_SCOPE,
      // Bootstrap, registration and first update are one synchronous step: nothing falls between them.
      bootstrap: () => dashboardBootstrap(environments.map((env) => this.view(env.id, env.projectId))),
      onOpen: (conn) => this.dashboards.register(conn, environments, stillAllowed, visibleNow),
    })
  }

  /** A scope's resume: the change log read for it, framed from the live set (`resume.ts`). */
  private resumable(scope: ResumeScope): Omit<StreamScope<FlagChange[]>, 'hubScope' | 'bootstrap'> {
    return {
      revision: () => this.feed.revision,
      missed: (from, upTo) => readScopeChanges(this.runtime.store, scope, from, upTo),
      resumeFrames: (from, changes) => resumeFrames(from, changes, scope, this.live, (p) => this.segments(p)),
    }
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
    () => this.dashboards.followNew((env) => this.view(env.id, env.projectId).updates),
    () => this.closed,
  )

  /** The segment-expanded flags of an environment as a JSON array, with a strong ETag. */
  snapshot(environmentId: string, projectId: string): { body: Buffer; etag: string } {
    const view = this.view(environmentId, projectId)
    return { body: view.snapshot, etag: view.etag }
  }

  /**
   * A flag as the project's SDKs would receive it (segments expanded with the
   * project's current segments): how an unsaved flag is evaluated like a saved one.
   */
  sdkView(flag: StoredFlag, projectId: string): StoredFlag {
    return expandFlag(flag, this.segments(projectId))
  }

  /** An environment's flag as saved (segment references kept): its rules as the editor numbers them. */
  savedFlag(environmentId: string, key: string): StoredFlag | undefined {
    return this.live.get(key, environmentId)?.flag
  }

  /** How many rules a segment's rule expands to now: its number of conditions (undefined: no such segment). */
  segmentSize(projectId: string, segmentKey: string): number | undefined {
    return this.segments(projectId)(segmentKey)?.length
  }

  /**
   * Closes the streams whose access ended: SDK keys that no longer exist (one
   * query for all of them), dashboard connections whose check fails. A check
   * that cannot run (database down) keeps the stream. Then follow-everything
   * dashboards pick up what became visible (`followNew`). Resolves how many closed.
   */
  async revalidate(): Promise<number> {
    const closed = await closeRevokedStreams(this.runtime, this.sdkKeyStreams, this.dashboards.accessOf)
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

  private hasSubscribers(environmentId: string): boolean {
    return this.hub.size(environmentId) > 0 || (this.dashboards.followers(environmentId)?.size ?? 0) > 0
  }

  private send(environmentId: string, frame: string): void {
    const bytes = Buffer.from(frame)
    this.hub.broadcast(bytes, environmentId)
    const dashboards = this.dashboards.followers(environmentId)
    if (dashboards) for (const conn of dashboards) conn.write(bytes)
  }

  private apply(changes: FlagChange[]): void {
    for (const change of changes) {
      if (isSegmentScope(change.scope)) this.applySegment(change)
      else if (UUID_PATTERN.test(change.scope)) this.applyFlag(change)
      else if (change.scope === ACCESS_SCOPE) void this.revalidateSoon()
      else if (change.scope === ENVIRONMENT_ORDER_SCOPE) this.applyEnvironmentOrder(change)
      else if (change.scope === PEOPLE_SCOPE) this.applyPeople(change)
    }
  }

  /** A user's role, name or password changed: every dashboard stream hears it (`recordPeopleEvent`). */
  private applyPeople(change: FlagChange): void {
    const userId = change.flag?.user_id
    const action = change.flag?.action
    if (typeof userId !== 'number' || typeof action !== 'string') return
    this.hub.broadcast(peopleFrame(userId, action), DASHBOARD_SCOPE)
  }

  /** A project's environments were reordered: dashboards following any of them get the new order. */
  private applyEnvironmentOrder(change: FlagChange): void {
    const ids = change.flag?.environment_ids
    const projectId = change.flag?.project_id
    if (!Array.isArray(ids) || typeof projectId !== 'string') return
    const frame = Buffer.from(environmentsFrame(projectId, ids, change.revision))
    for (const conn of this.dashboards.followingAny(ids)) conn.write(frame)
  }

  private applyFlag(change: FlagChange): void {
    const env = change.scope
    this.live.apply(change)
    this.views.delete(env)
    // Only an environment's first flag can be news to a follow-everything dashboard (a new project's);
    // one it already could not see stays invisible until a membership changes, which revalidation picks up.
    if (!this.seenEnvironments.has(env)) {
      this.seenEnvironments.add(env)
      if (this.dashboards.someoneMisses(env)) void this.followNew()
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
