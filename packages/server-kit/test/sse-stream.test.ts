import type { ServerResponse } from 'node:http'
import {
  CredentialStreams,
  listen,
  openStream,
  type RunningServer,
  resumedFrame,
  SseHub,
  type StreamScope,
} from '@flagsync/server-kit'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { afterEach, describe, expect, it } from 'vitest'

const servers: RunningServer[] = []
const hubs: SseHub[] = []
const readers: SseReader[] = []
afterEach(async () => {
  for (const reader of readers.splice(0)) reader.close()
  for (const hub of hubs.splice(0)) hub.stop()
  for (const server of servers.splice(0)) await server.close()
})

/**
 * A toy server on the engine: its state is a revision and the events up to it; a bootstrap is `connected` and
 * every event, a resume the events after the client's id. `live` applies a change and broadcasts it, as the
 * servers' change feeds do.
 */
async function serve(onMissed: (from: number, upTo: number) => void = () => {}) {
  const hub = new SseHub({ keepAliveMs: 0, retryMs: 0 })
  hubs.push(hub)
  const state = { revision: 0, opened: 0, reads: 0 }
  const frame = (revision: number) => `event: update\nid: ${revision}\ndata: ${revision}\n\n`
  const scope: StreamScope<number[]> = {
    hubScope: '',
    revision: () => state.revision,
    bootstrap: () => ['event: connected\nid\ndata: true\n\n', ...range(1, state.revision).map(frame)],
    async missed(from, upTo) {
      state.reads++
      await new Promise((resolve) => setTimeout(resolve, 20)) // a change-log read
      onMissed(from, upTo)
      return from <= upTo ? range(from + 1, upTo) : undefined
    },
    resumeFrames: (from, revisions) => resumedFrame(from) + revisions.map(frame).join(''),
    onOpen: () => void state.opened++,
  }
  const live = () => hub.broadcast(frame(++state.revision))
  const server = await listen((req, res) => void openStream(hub, req, res, scope), { host: '127.0.0.1', port: 0 })
  servers.push(server)
  const open = async (lastEventId?: string) => {
    const reader = await openSse(
      `http://127.0.0.1:${server.port}/`,
      lastEventId ? { 'Last-Event-ID': lastEventId } : {},
    )
    readers.push(reader)
    return reader
  }
  return { hub, state, live, open }
}

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i)
const ids = (reader: SseReader) => reader.events.map((e) => `${e.event}:${e.id}`)

describe('openStream (the engine both servers open /stream with)', () => {
  it('resumes a covered Last-Event-ID with only what was missed, else sends the bootstrap', async () => {
    const { live, open, state } = await serve()
    for (let i = 0; i < 5; i++) live()
    const resumed = await open('3')
    await resumed.waitForCount(3)
    expect(ids(resumed)).toEqual(['resumed:3', 'update:4', 'update:5'])
    for (const id of ['9', 'x']) {
      const full = await open(id)
      await full.waitForCount(6)
      expect(full.events[0]?.event, id).toBe('connected')
    }
    expect(state.opened).toBe(3)
  })

  it('a change broadcast while the missed changes are read is neither lost nor doubled: the read is redone', async () => {
    let changeDuringRead: (() => void) | undefined
    const { live, open, state } = await serve(() => {
      changeDuringRead?.()
      changeDuringRead = undefined
    })
    for (let i = 0; i < 3; i++) live()
    changeDuringRead = live // revision 4 is broadcast before the stream subscribes
    const resumed = await open('1')
    await resumed.waitForCount(4)
    live()
    await resumed.waitForCount(5)
    expect(ids(resumed)).toEqual(['resumed:1', 'update:2', 'update:3', 'update:4', 'update:5'])
    expect(state.reads).toBe(2)
  })
})

describe('CredentialStreams', () => {
  const stream = () => {
    const ended: string[] = []
    const res = {
      writableEnded: false,
      destroyed: false,
      once: () => res,
      end() {
        res.writableEnded = true
        ended.push('end')
      },
    }
    return { res: res as unknown as ServerResponse, ended }
  }

  it('ends the streams of credentials that are gone, asking once per credential; keeps all when it cannot ask', async () => {
    const streams = new CredentialStreams<number>()
    const [a, b, c] = [stream(), stream(), stream()]
    streams.track(a.res, 1)
    streams.track(b.res, 2)
    streams.track(c.res, 2)
    await expect(streams.closeRevoked(() => Promise.reject(new Error('database down')))).rejects.toThrow()
    expect([a.ended, b.ended, c.ended]).toEqual([[], [], []])
    const asked: number[][] = []
    const closed = await streams.closeRevoked(async (ids) => {
      asked.push(ids)
      return new Set([1])
    })
    expect({ closed, asked, ended: [a.ended, b.ended, c.ended], left: streams.size }).toEqual({
      closed: 2,
      asked: [[1, 2]],
      ended: [[], ['end'], ['end']],
      left: 1,
    })
  })
})
