// JavaScript CPU per OFREP bulk answer, with no kernel and no load generator in the figure: the flat API server
// (compiled packages, SQLite in a temp dir, SDK_KEY, the 350 flags of ofrep-flags.mjs) and a bare node:http
// handler answering our first answer from a Buffer (ofrep-bulk.mjs's baseline), both in this process, each fed the
// bench's random contexts as pre-built request bytes through an in-memory socket, one request at a time (the next
// once the answer's `finish` fires). The figure is this process's CPU time (`process.cpuUsage`) per answer, median
// of 6 batches, the two servers alternating. Steadier than ofrep-cpu.mjs on a loaded machine; it leaves out the
// socket writes, which cost both servers alike.
//   node bench/ofrep-handler.mjs                  # prints {"ours": µs, "baseline": µs, ...}
//   OFREP_HANDLER_REQUESTS=20000 node bench/ofrep-handler.mjs
//   node --cpu-prof bench/ofrep-handler.mjs       # a profile of the JavaScript path alone
// Not part of `npm run bench` (no row in the table): a tool for A/B pairs of a change (`npx tsc -b` in between).
import { createServer } from 'node:http'
import { join } from 'node:path'
import { Duplex } from 'node:stream'
import { loadConfig, startFlatApiServer } from '@flagsync/flat-api'
import { createLogger } from '@flagsync/server-kit'
import { log } from './lib/cli.mjs'
import { insertBatch } from './lib/flags.mjs'
import { tempDir } from './lib/proc.mjs'
import { median } from './lib/stats.mjs'
import { AUTH, OFREP_KEY, ofrepFlag, randomContexts } from './ofrep-flags.mjs'

const PATH = '/ofrep/v1/evaluate/flags'

/** A socket that is only memory: node:http parses what is pushed into it and its writes go nowhere. */
class MemorySocket extends Duplex {
  remoteAddress = '127.0.0.1'
  encrypted = false
  _read() {}
  /** @param {unknown} _chunk @param {string} _encoding @param {() => void} done */
  _write(_chunk, _encoding, done) {
    done()
  }
  /** @param {unknown[]} _chunks @param {() => void} done */
  _writev(_chunks, done) {
    done()
  }
  setTimeout() {
    return this
  }
  setNoDelay() {
    return this
  }
  setKeepAlive() {
    return this
  }
}

/**
 * `count` requests through one in-memory keep-alive connection of `server`, one after another.
 * @param {import('node:http').Server} server @param {Buffer[]} requests @param {number} count
 */
function drive(server, requests, count) {
  return new Promise((resolve) => {
    const socket = new MemorySocket()
    let sent = 0
    const next = () => {
      if (sent === count) {
        server.off('request', onRequest)
        socket.destroy()
        resolve(undefined)
      } else socket.push(requests[sent++ % requests.length])
    }
    const onRequest = (/** @type {unknown} */ _req, /** @type {import('node:http').ServerResponse} */ res) =>
      res.once('finish', () => queueMicrotask(next))
    server.prependListener('request', onRequest)
    server.emit('connection', socket)
    next()
  })
}

const count = Number(process.env.OFREP_HANDLER_REQUESTS ?? 10_000)
const tmp = tempDir('ofrep-handler')
const env = {
  SDK_KEY: OFREP_KEY,
  DATABASE_URL: `sqlite:${join(tmp.dir, 'flags.sqlite')}`,
  HOST: '127.0.0.1',
  PORT: '0',
}
const ours = await startFlatApiServer(loadConfig(env, { port: 0 }), createLogger({ level: 'warn' }))
try {
  const headers = { 'content-type': 'application/json', ...AUTH }
  const flags = Array.from({ length: 350 }, (_, i) => ofrepFlag(i))
  const seeded = await fetch(`${ours.url}/sync`, { method: 'POST', headers, body: JSON.stringify(insertBatch(flags)) })
  if (!seeded.ok) throw new Error(`seeding failed: ${seeded.status} ${await seeded.text()}`)
  const bodies = randomContexts(4096)
  const requests = bodies.map((body) =>
    Buffer.from(
      `POST ${PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer ${OFREP_KEY}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    ),
  )
  const first = await fetch(`${ours.url}${PATH}`, { method: 'POST', headers, body: bodies[0] })
  const fixed = Buffer.from(await first.arrayBuffer())
  const bare = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': fixed.length })
    res.end(fixed)
  })
  const targets = /** @type {const} */ ([
    ['ours', ours.server],
    ['baseline', bare],
  ])
  /** @type {Record<string, number[]>} */
  const micros = { ours: [], baseline: [] }
  for (const [, server] of targets) await drive(server, requests, Math.min(count, 3000)) // warm-up
  for (let round = 0; round < 6; round++) {
    for (const [name, server] of round % 2 === 0 ? targets : [...targets].reverse()) {
      const before = process.cpuUsage()
      await drive(server, requests, count)
      const used = process.cpuUsage(before)
      micros[name]?.push((used.user + used.system) / count)
    }
  }
  for (const [name, runs] of Object.entries(micros)) log(`${name}: ${runs.map((x) => x.toFixed(1)).join(', ')} µs`)
  const result = { ours: median(micros.ours ?? []), baseline: median(micros.baseline ?? []) }
  process.stdout.write(`${JSON.stringify({ ...result, requests: count, answerBytes: fixed.length })}\n`)
} finally {
  await ours.close()
  tmp.remove()
}
process.exit(0)
