// Child process holding N raw SSE connections (node:net, no HTTP parser: as light as a client can be, so the
// load generator takes as little of the shared CPU as possible). Driven over IPC by sse-fanout.mjs:
//   { cmd: 'connect', url, count, readyMarker }  opens `count` streams (in waves) and waits until each saw readyMarker
//   { cmd: 'collect', seq, timeoutMs }           waits until every stream received event `fanout:<seq>:<sentAt>`;
//                                                answers receipt latencies (now − sentAt, ms) as percentiles
//   { cmd: 'close' }                              closes every stream
// Run with a raised open-file limit (the orchestrator spawns it through `ulimit -n`).
import net from 'node:net'
import { serveRequests } from './lib/proc.mjs'
import { percentile } from './lib/stats.mjs'

const MARKER = /fanout:(\d+):(\d+(?:\.\d+)?)/g

/**
 * @typedef {object} Stream
 * @property {net.Socket} socket
 * @property {string} tail the end of the previous chunk, in case a marker straddles two
 * @property {number} lastSeq
 * @property {boolean} ready
 */

/** @type {Stream[]} */
let streams = []
/** @type {Map<number, number[]>} receipt latencies by event sequence number */
const latencies = new Map()
/** @type {Set<() => void>} */
const waiters = new Set()
let readyMarker = ''
let readyCount = 0

/** @param {Stream} stream @param {string} text */
function onText(stream, text) {
  const at = performance.timeOrigin + performance.now()
  const scan = stream.tail + text
  if (!stream.ready && scan.includes(readyMarker)) {
    stream.ready = true
    readyCount++
  }
  MARKER.lastIndex = 0
  for (let m = MARKER.exec(scan); m !== null; m = MARKER.exec(scan)) {
    const seq = Number(m[1])
    if (seq <= stream.lastSeq) continue
    stream.lastSeq = seq
    let list = latencies.get(seq)
    if (!list) {
      list = []
      latencies.set(seq, list)
    }
    list.push(at - Number(m[2]))
  }
  stream.tail = scan.length > 96 ? scan.slice(-96) : scan
  for (const w of waiters) w()
}

/** @param {URL} url */
function open(url) {
  /** @type {Stream} */
  const stream = { socket: /** @type {any} */ (null), tail: '', lastSeq: 0, ready: false }
  const socket = net.connect({ host: url.hostname, port: Number(url.port) })
  socket.setEncoding('utf8')
  socket.setNoDelay(true)
  socket.on('connect', () => {
    socket.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`)
  })
  socket.on('data', (text) => onText(stream, /** @type {string} */ (text)))
  socket.on('error', () => {})
  stream.socket = socket
  return stream
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
    const url = new URL(message.url)
    readyMarker = message.readyMarker
    const wave = 250
    const t0 = performance.now()
    for (let opened = 0; opened < message.count; ) {
      const n = Math.min(wave, message.count - opened)
      for (let i = 0; i < n; i++) streams.push(open(url))
      opened += n
      if (!(await until(() => readyCount >= opened, 30_000))) {
        throw new Error(`only ${readyCount} of ${opened} streams became ready`)
      }
    }
    return { connected: streams.length, ms: performance.now() - t0 }
  }
  if (message.cmd === 'collect') {
    const seq = message.seq
    const complete = await until(() => (latencies.get(seq)?.length ?? 0) >= streams.length, message.timeoutMs)
    const list = latencies.get(seq) ?? []
    latencies.delete(seq)
    return {
      complete,
      received: list.length,
      p50: percentile(list, 50),
      p99: percentile(list, 99),
      max: percentile(list, 100),
    }
  }
  if (message.cmd === 'close') {
    for (const s of streams) s.socket.destroy()
    streams = []
    return { closed: true }
  }
  throw new Error(`unknown command ${message.cmd}`)
})
