import type { RetryPolicy } from '@flagsync/protocol'
import type { Clock, FlagClient, ImpressionOptions, KeyValueStorage, OnlineSource } from '../types.js'

/** Options of `createRemoteFlagClient`: a client key and where the OFREP routes are. */
export interface RemoteFlagClientOptions {
  /**
   * The server's base URL (`https://flags.example.com/`, OFREP under `ofrep/v1/`), or the OFREP base itself
   * (`…/ofrep/v1`). Relative URLs resolve against the page.
   */
  baseUrl: string
  /** A client key (`pk_live_…` on the flag service, `CLIENT_KEY` on the flat API): sent as `Authorization: Bearer`. */
  clientKey: string
  /** The evaluation context the values are for (`user_id` is the bucketing id, sent as `targetingKey`). Default `{}`. */
  context?: Record<string, unknown>
  /**
   * The flag service's environment of the key: impressions go to `<baseUrl>api/environments/<environmentId>/impressions`
   * with the client key. Without it no impression is recorded (the flat API takes none).
   */
  environmentId?: string
  /** Impression reporting, as in `createFlagClient` (needs `environmentId`); `false` turns it off. */
  impressions?: boolean | ImpressionOptions
  /**
   * Where the last values of each context are kept (one entry per context, under a hash of it, at most
   * `maxStoredContexts`), so a start offline answers at creation. Default: the page's `localStorage`; `null`: none.
   */
  storage?: KeyValueStorage | null
  /** Contexts whose values are kept in `storage`, the most recently fetched. Default 10. */
  maxStoredContexts?: number
  /** Prefix of the `storage` entries and of the impression queue's database. Default 'flagsync'. */
  dbName?: string
  /**
   * The IndexedDB the impression queue is kept in (with `IDBKeyRange`, from the same implementation), so queued
   * impressions survive a reload as in `createFlagClient`. Default: the page's; where there is none, memory.
   */
  indexedDB?: IDBFactory
  /** The key range class of the same implementation as `indexedDB`. */
  IDBKeyRange?: typeof IDBKeyRange
  /** Used for evaluations, the refresh stream and impressions. Default: the global `fetch`. */
  fetch?: typeof fetch
  /** Backoff of failed fetches and refresh-stream reconnects. Default 1 s doubling to 30 s, +0–30 % jitter. */
  reconnect?: Partial<RetryPolicy>
  /** Default: the real clock. */
  clock?: Clock
  /** A number in [0, 1) for jitter and impression sampling. Default `Math.random`. */
  random?: () => number
  /** Default: `navigator.onLine` and the window's `online`/`offline` events. */
  online?: OnlineSource
}

/**
 * Flag values evaluated by the server for one context (OFREP remote evaluation): the page receives values, never
 * rules, segments or another context's values. The reading surface is `FlagClient`'s, so the OpenFeature provider
 * and `@flagsync/react` take it as they take a rules-mode client; `evaluate(key)` answers for the client's context
 * (`setContext` changes it), and edits reject: local edits through a sync client are a rules-mode feature.
 */
export interface RemoteFlagClient extends FlagClient {
  /** The context the values are for. */
  context(): Readonly<Record<string, unknown>>
  /**
   * Switches to another context: its stored values (if any) answer at once, then the server's; resolves once they
   * arrived (or the fetch failed: the status says why). An equal context changes nothing.
   */
  setContext(context: Record<string, unknown>): Promise<void>
}
