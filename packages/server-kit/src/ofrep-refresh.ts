import type { IncomingMessage, ServerResponse } from 'node:http'
import type { OfrepRefetchEvent } from '@flagsync/protocol'
import { formatSseEvent, parseLastEventId } from './sse.js'
import { SseHub, type SseHubOptions } from './sse-hub.js'
import { openStream } from './sse-stream.js'

/** What a scope's flags were last changed by: the change-log revision and when it was seen (unix seconds). */
export interface OfrepVersion {
  revision: number
  lastModified: number
}

/** Reports committed changes: the scopes they touched (`'*'`: every scope, e.g. after a reload) and the revision. */
export type OfrepWatch = (onChange: (scopes: readonly string[] | '*', revision: number) => void) => () => void

/** How a resuming provider's scope is checked against the change log (see {@link OfrepRefresh.open}). */
export interface OfrepChanges {
  /** Brings the scope's version up to commits of other processes first. */
  catchUp?: () => Promise<void>
  /** The scope's changes after `from` through `upTo`; undefined when the log cannot tell (pruned, too many). */
  missed?: (scope: string, from: number, upTo: number) => Promise<readonly unknown[] | undefined>
}

const nowSeconds = () => Math.floor(Date.now() / 1000)

/**
 * The refresh side of OFREP (ADR 0008): a version per scope, raised by every
 * change that touched it, and an SSE hub that tells that scope's providers to
 * re-fetch. A change notifies only the scopes it touched. A scope first seen
 * takes the revision its adapter reports as its version: at least as new as
 * any change to it, so a resuming provider re-fetches rather than miss one.
 */
export class OfrepRefresh {
  readonly hub: SseHub
  private readonly versions = new Map<string, OfrepVersion>()
  private readonly stopWatching: () => void

  constructor(watch: OfrepWatch, hubOptions: SseHubOptions = {}) {
    this.hub = new SseHub(hubOptions)
    this.stopWatching = watch((scopes, revision) => this.changed(scopes, revision))
  }

  /** The scope's version; `baseline` (the adapter's current revision) for a scope not seen changing yet. */
  versionOf(scope: string, baseline: number): OfrepVersion {
    let version = this.versions.get(scope)
    if (!version) {
      version = { revision: baseline, lastModified: nowSeconds() }
      this.versions.set(scope, version)
    }
    return version
  }

  /**
   * Opens a refresh stream on the scope (the shared engine's `openStream`).
   * Its bootstrap is empty. A `Last-Event-ID` older than the scope's version
   * gets one refetchEvaluation at once when `missed` (the change log read for
   * the scope) finds changes to it after that id, or cannot tell (pruned, too
   * far behind, no `missed`); a provider whose scope did not change while it
   * was away (a server restart raised only the global revision) gets nothing.
   * `headers` (node:http's flat list) go with the stream's own.
   */
  open(
    req: IncomingMessage,
    res: ServerResponse,
    scope: string,
    baseline: number,
    changes: OfrepChanges = {},
    headers?: readonly string[],
  ) {
    const version = () => this.versionOf(scope, baseline)
    const stale = (from: number) => from < version().revision
    return openStream<boolean>(this.hub, req, res, {
      hubScope: scope,
      ...(headers && { headers }),
      revision: () => version().revision,
      catchUp: changes.catchUp,
      // No id (or a current one): nothing to tell, and no change-log read.
      bootstrap: () => {
        const last = parseLastEventId(req.headers['last-event-id'])
        return last !== undefined && stale(last) ? refetchFrame(version()) : []
      },
      ...(changes.missed && {
        missed: async (from, upTo) => {
          if (!stale(from)) return false
          const found = await changes.missed?.(scope, from, upTo)
          return found && found.length > 0
        },
      }),
      resumeFrames: (_from, missed) => (missed ? refetchFrame(version()) : []),
    })
  }

  stop(): void {
    this.stopWatching()
    this.hub.stop()
  }

  private changed(scopes: readonly string[] | '*', revision: number): void {
    const version = { revision, lastModified: nowSeconds() }
    if (scopes === '*') {
      for (const scope of this.versions.keys()) this.versions.set(scope, version)
      this.hub.broadcastAll(refetchFrame(version))
      return
    }
    const frame = Buffer.from(refetchFrame(version))
    for (const scope of new Set(scopes)) {
      this.versions.set(scope, version)
      this.hub.broadcast(frame, scope)
    }
  }
}

/** `event: message`, `id` the change revision, data `{type: 'refetchEvaluation', etag, lastModified}`. */
function refetchFrame(version: OfrepVersion): string {
  const data: OfrepRefetchEvent = {
    type: 'refetchEvaluation',
    etag: String(version.revision),
    lastModified: version.lastModified,
  }
  return formatSseEvent({ event: 'message', id: version.revision, data: JSON.stringify(data) })
}
