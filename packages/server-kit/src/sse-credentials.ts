import type { ServerResponse } from 'node:http'

/**
 * Open streams by the credential each was opened with, so that revoking a
 * credential ends its streams at once (the client's reconnect then meets the
 * auth check). Any response stream can be tracked: an SSE connection's `res`,
 * an OFREP refresh stream.
 */
export class CredentialStreams<Id> {
  private readonly credentialOf = new Map<ServerResponse, Id>()

  /** Open streams tracked now. */
  get size(): number {
    return this.credentialOf.size
  }

  /** Tracks `res` under `id` until it closes. */
  track(res: ServerResponse, id: Id): void {
    if (res.writableEnded || res.destroyed) return
    this.credentialOf.set(res, id)
    res.once('close', () => this.credentialOf.delete(res))
  }

  /**
   * Ends the streams whose credential `alive` no longer reports (it is given
   * every distinct id once). When `alive` throws (database down), every
   * stream is kept and the error propagates. Resolves how many ended.
   */
  async closeRevoked(alive: (ids: Id[]) => Promise<ReadonlySet<Id>>): Promise<number> {
    if (this.credentialOf.size === 0) return 0
    const live = await alive([...new Set(this.credentialOf.values())])
    let closed = 0
    for (const [res, id] of this.credentialOf) {
      if (live.has(id)) continue
      this.credentialOf.delete(res)
      if (!res.writableEnded) res.end()
      closed++
    }
    return closed
  }
}
