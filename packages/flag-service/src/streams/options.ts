export interface FlagStreamOptions {
  /** Keep-alive comment interval on /stream, ms (default 15 000, the flag service's limits). */
  keepAliveMs?: number
  /** Change-log poll interval, ms (default 1 000): the backstop for other instances' writes. */
  pollIntervalMs?: number
  /** Bytes a slow stream subscriber may have queued behind its bootstrap before it is dropped (default 1 MiB). */
  maxStreamBufferBytes?: number
  /** Open streams at most, SDK and dashboard together (default 10 000); past it 503 with Retry-After. */
  maxStreamConnections?: number
  /** Base of the `retry:` every stream starts with, ms (default 1 000; each connection adds up to as much again). */
  streamRetryMs?: number
  /**
   * Change-log entries older than this are pruned hourly (default 7 days; the newest 1 000 are always kept).
   * The same hourly timer removes the segments of deleted projects.
   */
  changeRetentionMs?: number
  /**
   * How often open streams are checked against their credentials, ms (default 60 000; 0 disables): a stream
   * whose session or token expired is closed within this interval (the client's reconnect then gets a 401).
   * Deleting an SDK key or token, signing out, deleting a user or removing a member is not waited for: the
   * route records it in the change log and every instance re-checks its streams as soon as it reads it.
   */
  revalidateMs?: number
}

/** An environment and the project it belongs to. */
export interface EnvironmentRef {
  id: string
  projectId: string
}
