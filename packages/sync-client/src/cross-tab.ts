import type { Operation } from '@flagsync/protocol'
import type { BroadcastChannelFactory, BroadcastChannelLike } from './types.js'

/** What instances sharing one outbox tell each other. */
export type CrossTabMessage =
  | { type: 'changed' }
  | { type: 'delivered'; batchId: string; operations: Operation[]; duplicate?: boolean }

/** BroadcastChannel when the platform has one (browsers, Node ≥ 18), looked up when called. */
export function defaultBroadcastChannel(): BroadcastChannelFactory | null {
  const Ctor = (globalThis as { BroadcastChannel?: new (name: string) => BroadcastChannelLike }).BroadcastChannel
  if (typeof Ctor !== 'function') return null
  return (name) => {
    const channel = new Ctor(name)
    // Node: a channel must not keep the process alive on its own.
    ;(channel as { unref?: () => void }).unref?.()
    return channel
  }
}

export function isCrossTabMessage(data: unknown): data is CrossTabMessage {
  // Messages are structured clones (never functions): anything but an object has none of these fields.
  const { type, batchId, operations } = Object(data) as { type?: unknown; batchId?: unknown; operations?: unknown }
  return type === 'changed' || (type === 'delivered' && typeof batchId === 'string' && Array.isArray(operations))
}
