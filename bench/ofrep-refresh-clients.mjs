// Child process holding N raw SSE connections (node:net, no HTTP parser, as sse-clients.mjs) for
// ofrep-refresh.mjs. The OFREP refreshEvaluation frame carries no send time, so the arrival time of each stream's
// first frame containing `marker` after an `arm` is recorded and the orchestrator's send time is subtracted:
//   { cmd: 'connect', url, count, readyMarker, marker }  opens `count` streams in waves of 250, waits for readyMarker
//   { cmd: 'arm', round }                                 the next marker seen on each stream belongs to `round`
//   { cmd: 'collect', round, sentAt, timeoutMs }          waits for every stream's arrival; percentiles of at − sentAt
//   { cmd: 'close' }                                      closes every stream
import net from 'node:net'
import { serveRequests } from './lib/proc.mjs'
import { epochMs, percentile } from './lib/stats.mjs'

/** @typedef {{ socket: net.Socket, tail: string, ready: boolean, round: number }} Stream */

/** @type {Stream[]} */
let streams = []
let readyMarker = ''
let marker = ''
let readyCount = 0
let armed = 0
/** @type {number[]} arrival times (epoch ms) of the armed round */
let arrivals = []
/** @type {Set<() => void>} */
const waiters = new Set()

/** @param {Stream} stream @param {string} text */
function onText(stream, text) {
  const at = epochMs()
  const scan = stream.tail + text
  if (!stream.ready && scan.includes(readyMarker)) {
    stream.ready = true
    readyCount++
  }
  if (armed > stream.round && scan.includes(marker)) {
    stream.round = armed
    arrivals.push(at)
  }
  // Only what may start a marker split across two chunks is kept, and none of a marker already counted.
  stream.tail = scan.slice(-(marker.length - 1))
  for (const w of waiters) w()
}

/** @param {URL} url */
function open(url) {
  /** @type {Stream} */
  const stream = { socket: /** @type {any} */ (null), tail: '', ready: false, round: 0 }
  const socket = net.connect({ host: url.hostname, port: Number(url.port) })
  socket.setEncoding('utf8')
  socket.setNoDelay(true)
  socket.on('connect', () => {
    socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`)
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
    marker = message.marker
    const t0 = performance.now()
    for (let opened = 0; opened < message.count; ) {
      const n = Math.min(250, message.count - opened)
      for (let i = 0; i < n; i++) streams.push(open(url))
      opened += n
      if (!(await until(() => readyCount >= opened, 30_000))) {
        throw new Error(`only ${readyCount} of ${opened} streams became ready`)
      }
    }
    return { connected: streams.length, ms: performance.now() - t0 }
  }
  if (message.cmd === 'arm') {
    armed = message.round
    arrivals = []
    return { armed }
  }
  if (message.cmd === 'collect') {
    const complete = await until(() => arrivals.length >= streams.length, message.timeoutMs)
    const list = arrivals.map((at) => at - message.sentAt)
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
