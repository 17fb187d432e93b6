import type { SseConnection } from '@flagsync/server-kit'
import type { EnvironmentRef } from './options.js'

/**
 * The dashboard streams of a process and what each follows: the environments
 * whose updates it gets, the check of its access (revalidation), and for a
 * follow-everything stream how to list what its user sees now (`followNew`).
 */
export class DashboardFollows {
  /** Connections by environment they follow. */
  private readonly byEnvironment = new Map<string, Set<SseConnection>>()
  /** The check of each connection's access (`closeRevokedStreams`). */
  readonly accessOf = new Map<SseConnection, () => Promise<boolean>>()
  private readonly followedBy = new Map<SseConnection, Set<string>>()
  private readonly followingAll = new Map<SseConnection, () => Promise<EnvironmentRef[]>>()

  /** Registers an open stream until it closes; with `visibleNow` it follows everything its user can see. */
  register(
    conn: SseConnection,
    environments: readonly EnvironmentRef[],
    stillAllowed: () => Promise<boolean>,
    visibleNow?: () => Promise<EnvironmentRef[]>,
  ): void {
    this.accessOf.set(conn, stillAllowed)
    const following = new Set<string>()
    this.followedBy.set(conn, following)
    for (const env of environments) this.follow(conn, following, env.id)
    if (visibleNow) this.followingAll.set(conn, visibleNow)
    conn.res.on('close', () => {
      this.accessOf.delete(conn)
      this.followingAll.delete(conn)
      this.followedBy.delete(conn)
      for (const id of following) {
        const set = this.byEnvironment.get(id)
        set?.delete(conn)
        if (set?.size === 0) this.byEnvironment.delete(id)
      }
    })
  }

  /** The connections following an environment. */
  followers(environmentId: string): ReadonlySet<SseConnection> | undefined {
    return this.byEnvironment.get(environmentId)
  }

  /** The connections following any of these environments. */
  *followingAny(environmentIds: readonly unknown[]): Iterable<SseConnection> {
    for (const [conn, following] of this.followedBy) {
      if (environmentIds.some((id) => following.has(String(id)))) yield conn
    }
  }

  /** Whether a follow-everything stream does not follow this environment (yet). */
  someoneMisses(environmentId: string): boolean {
    for (const conn of this.followingAll.keys()) if (!this.followedBy.get(conn)?.has(environmentId)) return true
    return false
  }

  /**
   * Follow-everything streams add the environments that became visible: each
   * gets `updatesOf(environment)` (as bootstrap: a large environment cannot
   * make the cap drop a stream that is reading), then its updates.
   */
  async followNew(updatesOf: (env: EnvironmentRef) => Buffer): Promise<void> {
    for (const [conn, visibleNow] of [...this.followingAll]) {
      const environments = await visibleNow().catch(() => [])
      const following = this.followedBy.get(conn)
      if (!following) continue // closed meanwhile
      for (const env of environments) {
        if (following.has(env.id)) continue
        conn.writeBootstrap(updatesOf(env))
        this.follow(conn, following, env.id)
      }
    }
  }

  private follow(conn: SseConnection, following: Set<string>, environmentId: string): void {
    following.add(environmentId)
    let set = this.byEnvironment.get(environmentId)
    if (!set) {
      set = new Set()
      this.byEnvironment.set(environmentId, set)
    }
    set.add(conn)
  }
}
