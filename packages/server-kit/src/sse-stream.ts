import type { IncomingMessage, ServerResponse } from 'node:http'
import { formatSseEvent, parseLastEventId } from './sse.js'
import type { SseConnection, SseHub } from './sse-hub.js'

/**
 * What one kind of stream serves, supplied by its server: the hub scope its
 * connections join, its full bootstrap, and how to tell a client that
 * resumes what it missed. Event ids are change-log revisions (the same on
 * every instance and across restarts), so a client may resume on any of them.
 * `T` is what `missed` read for `resumeFrames` to frame.
 */
export interface StreamScope<T = unknown> {
  /** The hub scope the connection joins (its broadcasts); '' for the whole set. */
  hubScope: string
  /** More response headers, as node:http's flat `[name, value, …]` list. */
  headers?: readonly string[]
  /** The revision the server's live state (and so `bootstrap`) is at now. */
  revision(): number
  /**
   * The whole state as one chunk (shared buffers: written by reference). Its
   * first event carries an empty `id:` so a client cut off before any flag
   * reconnects without Last-Event-ID, and its flags go in revision order, each
   * with its revision as id: a client cut off after id r holds every flag last
   * changed at or before r, and the log after r has the rest.
   */
  bootstrap(): Chunks
  /** Brings `revision()` up to the change log (other instances' commits) before a resume is judged. */
  catchUp?(): Promise<void>
  /**
   * What a client that last saw `from` missed, up to `upTo`; undefined sends
   * a full bootstrap instead (log pruned past `from`, too far behind). Omitted:
   * the scope never resumes.
   */
  missed?(from: number, upTo: number): Promise<T | undefined>
  /** The resumed stream's first chunk, built from the live state at `upTo` (called in the tick it is sent). */
  resumeFrames?(from: number, missed: T): Chunks
  /** Runs in the tick the stream opens (before any later change is broadcast): register it for updates, revocation. */
  onOpen?(conn: SseConnection): void
}

/** A stream's first bytes: one chunk, or several (shared buffers, each written by reference, none copied). */
export type Chunks = string | Buffer | ReadonlyArray<string | Buffer>

/** Resume reads that a concurrent change made stale are retried this many times before a bootstrap is sent. */
const RESUME_ATTEMPTS = 3

/**
 * Opens a stream with its full bootstrap, synchronously: bootstrap, `retry:`
 * and headers leave in one write, and the subscription is taken in the same
 * tick, so no change falls between them.
 * @throws HttpError `unavailable` (503) past the hub's connection cap.
 */
export function openBootstrapStream<T>(
  hub: SseHub,
  req: IncomingMessage,
  res: ServerResponse,
  scope: StreamScope<T>,
): SseConnection {
  if (req.method === 'HEAD') return hub.open(req, res, scope.hubScope, scope.headers ? { headers: scope.headers } : {})
  return openWith(hub, req, res, scope, scope.bootstrap())
}

/** Opens with `chunks` as the bootstrap (the first in the hub's single write), then registers the connection. */
function openWith<T>(hub: SseHub, req: IncomingMessage, res: ServerResponse, scope: StreamScope<T>, chunks: Chunks) {
  const [first, ...rest] = typeof chunks === 'string' || Buffer.isBuffer(chunks) ? [chunks] : chunks
  const headers = scope.headers ? { headers: scope.headers } : {}
  const conn = hub.open(req, res, scope.hubScope, first === undefined ? headers : { ...headers, initial: first })
  for (const chunk of rest) conn.writeBootstrap(chunk)
  scope.onOpen?.(conn)
  return conn
}

/**
 * Opens a stream: a client whose `Last-Event-ID` the change log still covers
 * gets `resumed` and only what it missed (`scope.resumeFrames`); any other
 * gets the full bootstrap. The missed changes are read up to the live
 * revision and sent only if that revision still holds when they arrive:
 * otherwise the live updates since could fall between them and the
 * subscription, so the read is retried, then a bootstrap sent.
 * @throws HttpError `unavailable` (503) past the hub's connection cap.
 */
export async function openStream<T>(
  hub: SseHub,
  req: IncomingMessage,
  res: ServerResponse,
  scope: StreamScope<T>,
): Promise<SseConnection> {
  // A HEAD gets the headers alone (the hub ends it at once): no change-log lookup for it.
  const from = req.method === 'HEAD' ? undefined : parseLastEventId(req.headers['last-event-id'])
  if (from !== undefined && scope.missed && scope.resumeFrames) {
    await scope.catchUp?.()
    for (let attempt = 0; attempt < RESUME_ATTEMPTS && !hub.full; attempt++) {
      const upTo = scope.revision()
      const missed = await scope.missed(from, upTo)
      if (missed === undefined) break
      if (scope.revision() !== upTo) continue
      return openWith(hub, req, res, scope, scope.resumeFrames(from, missed))
    }
  }
  return openBootstrapStream(hub, req, res, scope)
}

/**
 * A resumed stream's first event (instead of `connected`, which tells clients
 * to start over): `resumed`, with the client's id repeated. A client that
 * never heard of resuming has no listener for it and keeps its state.
 */
export function resumedFrame(from: number, data = 'true'): string {
  return formatSseEvent({ event: 'resumed', data, id: from })
}
