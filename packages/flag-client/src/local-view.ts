import { jsonEqual } from '@flagsync/evaluation'
import type { Operation } from '@flagsync/protocol'
import { applyPending } from './apply-pending.js'
import type { ClientFlag, FlagConflict } from './types.js'

/** An outbox entry as the flag client keeps it: the local id orders the operations of one flag. */
export interface PendingEntry {
  id: number
  operation: Operation
}

/** An operation the receiver acknowledged, shown until the stream echoes it (or it times out). */
export interface AckedOp {
  op: Operation
  ackedAt: number
}

/**
 * The local-first view (the server's flags, acknowledged edits not yet
 * echoed, queued edits on top, conflicted flags as the server has them),
 * kept up to date per flag. Every operation touches one flag, so a change
 * recomputes only the flags it touches: queuing an edit costs one patch,
 * not a replay of the whole outbox. The property test holds it to the
 * definition: `applyPending` of every operation over the server's set.
 */
export class LocalView {
  #server = new Map<string, ClientFlag>()
  #acked: AckedOp[] = []
  #pending: PendingEntry[] = []
  /** Pending entries of this collection by flag key, in id order. */
  #pendingByKey = new Map<string, PendingEntry[]>()
  #conflicts = new Map<string, FlagConflict>()
  #current = new Map<string, ClientFlag>()

  constructor(private readonly collection: string) {}

  /** The view; its identity changes exactly when a flag reads differently. */
  get view(): Map<string, ClientFlag> {
    return this.#current
  }

  get serverFlags(): ReadonlyMap<string, ClientFlag> {
    return this.#server
  }

  /** A new server set: every flag is recomputed. Returns the keys that now read differently. */
  replaceServer(flags: Map<string, ClientFlag>): string[] {
    // An empty view and nothing on top (a cold start from the cache): the view is the set itself, at once. Per flag
    // this cost 2–3 ms of a cold page for 1 000 flags. Sharing the map is safe: both are replaced, never changed.
    if (!this.#current.size && flags.size && !this.#acked[0] && !this.#pending[0] && !this.#conflicts.size) {
      this.#server = this.#current = flags
      return [...flags.keys()]
    }
    const keys = new Set([...this.#server.keys(), ...flags.keys()])
    this.#server = flags
    return this.#recompute(keys)
  }

  /** The stream changed (or removed) one flag, echoing our acknowledged edits of it. */
  serverChanged(key: string, flag: ClientFlag | undefined): string[] {
    this.#server = new Map(this.#server)
    if (flag) this.#server.set(key, flag)
    else this.#server.delete(key)
    this.#acked = this.#acked.filter((a) => a.op.recordId !== key || a.op.collection !== this.collection)
    return this.#recompute([key])
  }

  /** Acknowledged edits of a delivered batch; those from before `after` (ms) are dropped first. */
  addAcked(ops: readonly Operation[], at: number): string[] {
    const mine = ops.filter((op) => op.collection === this.collection)
    if (mine.length === 0) return []
    this.#acked = [...this.#acked, ...mine.map((op) => ({ op, ackedAt: at }))]
    return this.#recompute(mine.map((op) => op.recordId))
  }

  /** Drops acknowledged edits for which `drop` holds (timed out, or already in a newer bootstrap). */
  dropAcked(drop: (a: AckedOp) => boolean): string[] {
    const gone = this.#acked.filter(drop)
    if (gone.length === 0) return []
    this.#acked = this.#acked.filter((a) => !drop(a))
    return this.#recompute(gone.map((a) => a.op.recordId))
  }

  /** The outbox as just read. `keep`: entries missing from it that must stay (queued after the read began). */
  setPending(entries: readonly PendingEntry[], keep: (id: number) => boolean = () => false): string[] {
    const incoming = new Set(entries.map((e) => e.id))
    const next = [...entries, ...this.#pending.filter((e) => !incoming.has(e.id) && keep(e.id))].sort(
      (a, b) => a.id - b.id,
    )
    const known = new Map(this.#pending.map((e) => [e.id, e]))
    const touched = new Set<string>()
    for (const e of next) if (!known.delete(e.id)) touched.add(e.operation.recordId)
    for (const e of known.values()) touched.add(e.operation.recordId) // gone
    this.#pending = next
    this.#index()
    return this.#recompute([...touched])
  }

  /** One entry this client just queued. Ignored when a read already brought it. */
  appendPending(entry: PendingEntry): string[] {
    const last = this.#pending.at(-1)
    if (last && entry.id <= last.id) {
      // Not the newest (a read already brought later ones): place it like a read would.
      if (this.#pending.some((e) => e.id === entry.id)) return []
      return this.setPending([...this.#pending, entry])
    }
    // The common case, in O(1) besides the flag's own operations: the newest entry goes last.
    this.#pending.push(entry)
    const { operation } = entry
    if (operation.collection !== this.collection) return []
    const list = this.#pendingByKey.get(operation.recordId)
    if (list) list.push(entry)
    else this.#pendingByKey.set(operation.recordId, [entry])
    return this.#recompute([operation.recordId])
  }

  setConflicts(found: readonly FlagConflict[]): string[] {
    const next = new Map(found.filter((c) => c.collection === this.collection).map((c) => [c.recordId, c]))
    const keys = new Set([...this.#conflicts.keys(), ...next.keys()])
    this.#conflicts = next
    return this.#recompute(keys)
  }

  #index(): void {
    const byKey = new Map<string, PendingEntry[]>()
    for (const e of this.#pending) {
      if (e.operation.collection !== this.collection) continue
      const list = byKey.get(e.operation.recordId)
      if (list) list.push(e)
      else byKey.set(e.operation.recordId, [e])
    }
    this.#pendingByKey = byKey
  }

  /** One flag as the view shows it. */
  #flagOf(key: string): ClientFlag | undefined {
    const server = this.#server.get(key)
    const conflict = this.#conflicts.get(key)
    if (conflict) return server && { ...server, conflict }
    const ops: Operation[] = []
    for (const a of this.#acked) if (a.op.recordId === key && a.op.collection === this.collection) ops.push(a.op)
    for (const e of this.#pendingByKey.get(key) ?? []) ops.push(e.operation)
    if (ops.length === 0) return server
    const single = new Map<string, ClientFlag>()
    if (server) single.set(key, server)
    return applyPending(single, ops, this.collection).get(key)
  }

  /** Recomputes `keys`; swaps in a new map (copy on write) when one of them reads differently. */
  #recompute(keys: Iterable<string>): string[] {
    const changed: string[] = []
    let copy: Map<string, ClientFlag> | undefined
    for (const key of new Set(keys)) {
      const after = this.#flagOf(key)
      // A reconnect's bootstrap (or a recomputed pending edit) brings new objects that often read the same:
      // only a flag that reads differently is a change, and the snapshot keeps its old object.
      if (jsonEqual(this.#current.get(key), after)) continue
      changed.push(key)
      copy ??= new Map(this.#current)
      if (after === undefined) copy.delete(key)
      else copy.set(key, after)
    }
    if (copy) this.#current = copy
    return changed
  }
}
