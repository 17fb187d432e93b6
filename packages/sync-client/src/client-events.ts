import type { Operation } from '@flagsync/protocol'
import { type CrossTabMessage, isCrossTabMessage } from './cross-tab.js'
import type { PipelineEvents } from './pipeline-events.js'
import { callSafely, type StatusFeed } from './status-feed.js'
import type { BroadcastChannelLike, Clock, DeliveredListener, DeliveryInfo, SyncClient } from './types.js'

const CROSS_TAB_THROTTLE_MS = 50

/** What a client tells: its status subscribers, its `onDelivered` listeners, and the other instances on its outbox. */
export interface ClientEvents extends PipelineEvents, Pick<SyncClient, 'onDelivered'> {
  /** The outbox content changed: refresh the status here and in other tabs. */
  changed(): void
  /** Drops the listeners, sends the last pending change to the other tabs and closes the channel. */
  close(): void
}

/**
 * See `ClientEvents`. Other tabs hear of a change at once, then at most once per CROSS_TAB_THROTTLE_MS while changes
 * keep coming (one trailing message covers them): a BroadcastChannel message per write was ~15 % of an awaited
 * update()'s main-thread time in Chromium, and the other tabs re-read the outbox once per message anyway.
 */
export function createClientEvents(
  feed: StatusFeed,
  channel: BroadcastChannelLike | null,
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  isClosed: () => boolean,
  assertOpen: () => void,
): ClientEvents {
  const listeners = new Set<DeliveredListener>()
  /** While set, further 'changed' messages wait for it. */
  let timer: unknown = null
  let pending = false
  const post = (message: CrossTabMessage): void => {
    try {
      channel?.postMessage(message)
    } catch {
      // A closed channel (page going away) must not break delivery.
    }
  }
  const delivered = ({ batchId, operations }: { batchId: string; operations: Operation[] }, info: DeliveryInfo) => {
    feed.detachedError = null
    for (const listener of [...listeners]) callSafely(() => listener(batchId, operations, info))
  }
  const announce = (): void => {
    if (timer !== null) {
      pending = true
      return
    }
    post({ type: 'changed' })
    timer = clock.setTimeout(() => {
      timer = null
      if (!pending) return
      pending = false
      announce()
    }, CROSS_TAB_THROTTLE_MS)
  }
  const changed = (): void => {
    feed.refresh()
    if (channel) announce()
  }
  if (channel) {
    channel.onmessage = ({ data }) => {
      if (isClosed() || !isCrossTabMessage(data)) return
      if (data.type === 'delivered') delivered(data, { duplicate: data.duplicate === true })
      feed.refresh()
    }
  }
  return {
    changed,
    attemptStarted: feed.notifyFromCache,
    delivered(batch, info) {
      delivered(batch, info)
      const { batchId, operations } = batch
      post({ type: 'delivered', batchId, operations, duplicate: info.duplicate })
      changed()
    },
    deadLettered(error) {
      feed.detachedError = error
      changed()
    },
    failureRecorded: changed,
    conflicted: changed,
    onDelivered(listener) {
      assertOpen()
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
      }
    },
    close() {
      listeners.clear()
      if (timer !== null) clock.clearTimeout(timer)
      if (pending) post({ type: 'changed' }) // the last changes must still reach the other tabs
      if (channel) {
        channel.onmessage = null
        channel.close()
      }
    },
  }
}
