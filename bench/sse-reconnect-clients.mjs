// Child process holding N raw reconnecting SSE connections (node:net, bytes only: the client spends as little of
// the shared CPU as it can). Driven over IPC by sse-reconnect.mjs:
//   { cmd: 'connect', url, count, marker, minBytes }  opens `count` streams in waves until each has a full bootstrap
//   { cmd: 'arm' }     a new generation: from now on a stream counts once a connection opened after this has
//                      answered 200 and delivered `minBytes` bytes ending in `marker` (the end of the bootstrap)
//   { cmd: 'wait', timeoutMs }  resolves when every stream is bootstrapped again: epoch ms of the last and p50
//   { cmd: 'close' }   closes every stream (no more reconnects)
// A stream whose connection closes or fails reconnects after 100–500 ms (uniformly at random, for every attempt):
// the same policy for every server, whatever `retry:` it sends. Run with a raised open-file limit.
import net from 'node:net'
import { serveRequests } from './lib/proc.mjs'
import { percentile } from './lib/stats.mjs'

const OK = Buffer.from('HTTP/1.1 200')

/**
 * @typedef {object} Stream
 * @property {net.Socket | null} socket
 * @property {number} generation of the current connection
 * @property {number} bytes received on the current connection (headers included)
 * @property {Buffer} tail the last bytes of the previous chunk, in case the marker straddles two
 * @property {boolean} status the current connection answered 200
 * @property {boolean} done bootstrapped in the current generation
 */

/** @type {Stream[]} */
let streams = []
let generation = 0
let doneCount = 0
/** @type {number[]} epoch ms at which each stream of this generation finished */
let doneAt = []
let attempts = 0
let refused = 0
let closing = false
/** @type {URL} */
let url
/** @type {Buffer} */
let marker = Buffer.alloc(0)
let minBytes = 0
/** @type {Set<() => void>} */
const waiters = new Set()

const epochMs = () => performance.timeOrigin + performance.now()

/** @param {Stream} stream */
function connect(stream) {
  attempts++
  const socket = net.connect({ host: url.hostname, port: Number(url.port) })
  stream.socket = socket
  stream.generation = generation
  stream.bytes = 0
  stream.tail = Buffer.alloc(0)
  stream.status = false
  socket.setNoDelay(true)
  socket.on('connect', () => {
    socket.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`)
  })
  socket.on('data', (/** @type {Buffer} */ chunk) => {
    if (stream.bytes === 0) stream.status = chunk.subarray(0, OK.length).equals(OK)
    stream.bytes += chunk.length
    if (stream.done || !stream.status || stream.generation !== generation) return
    const scan = stream.tail.length ? Buffer.concat([stream.tail, chunk]) : chunk
    if (stream.bytes >= minBytes && scan.includes(marker)) {
      stream.done = true
      doneCount++
      doneAt.push(epochMs())
      for (const w of waiters) w()
    }
    stream.tail = scan.subarray(Math.max(0, scan.length - marker.length))
  })
  socket.on('error', (/** @type {NodeJS.ErrnoException} */ error) => {
    if (error.code === 'ECONNREFUSED') refused++
  })
  socket.on('close', () => {
    stream.socket = null
    if (closing) return
    setTimeout(() => connect(stream), 100 + Math.random() * 400)
  })
}

/** @param {() => boolean} done @param {number} timeoutMs */
function until(done, timeoutMs) {
  return new Promise((resolve) => {
    const check = () => {
      if (!done()) return
      waiters.delete(check)
      clearTimeout(timer)
      resolve(true)
    }
    const timer = setTimeout(() => {
      waiters.delete(check)
      resolve(false)
    }, timeoutMs)
    waiters.add(check)
    check()
  })
}

serveRequests(async (message) => {
  if (message.cmd === 'connect') {
    url = new URL(message.url)
    marker = Buffer.from(message.marker)
    minBytes = message.minBytes
    const wave = 250
    const t0 = performance.now()
    for (let opened = 0; opened < message.count; ) {
      const n = Math.min(wave, message.count - opened)
      for (let i = 0; i < n; i++) {
        /** @type {Stream} */
        const stream = { socket: null, generation, bytes: 0, tail: Buffer.alloc(0), status: false, done: false }
        streams.push(stream)
        connect(stream)
      }
      opened += n
      if (!(await until(() => doneCount >= opened, 60_000))) {
        throw new Error(`only ${doneCount} of ${opened} streams got their bootstrap`)
      }
    }
    return { connected: streams.length, ms: performance.now() - t0 }
  }
  if (message.cmd === 'arm') {
    generation++
    doneCount = 0
    doneAt = []
    attempts = 0
    refused = 0
    for (const s of streams) s.done = false
    return { generation }
  }
  if (message.cmd === 'wait') {
    const complete = await until(() => doneCount >= streams.length, message.timeoutMs)
    return {
      complete,
      done: doneCount,
      lastAt: doneAt.length ? Math.max(...doneAt) : null,
      p50At: percentile(doneAt, 50),
      attempts,
      refused,
    }
  }
  if (message.cmd === 'close') {
    closing = true
    for (const s of streams) s.socket?.destroy()
    streams = []
    return { closed: true }
  }
  throw new Error(`unknown command ${message.cmd}`)
})
