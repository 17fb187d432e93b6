// sse.resume.bytes_ratio (run by sse-reconnect.mjs): a client that reconnects with Last-Event-ID after missing 10
// changes out of 10 000 flags, against a full bootstrap. Both are the bytes read off a raw socket (status line and
// headers included) from the request until the completion comment, on the real flat API CLI over loopback.
import net from 'node:net'
import { atMost, log, row } from './lib/cli.mjs'
import { makeFlag, seedFlags } from './lib/flags.mjs'
import { FLAT_API_CLI, startCli } from './lib/proc.mjs'

const FLAGS = 10_000
const MISSED = 10
const MARKER = ': bootstrap complete\n\n'

/**
 * GET /stream on a raw socket until the completion comment; the bytes as received.
 * @param {string} baseUrl @param {Record<string, string>} [headers]
 * @returns {Promise<Buffer>}
 */
function readStream(baseUrl, headers = {}) {
  const url = new URL('/stream', baseUrl)
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port) })
    /** @type {Buffer[]} */
    const chunks = []
    let length = 0
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no completion comment within 30 s (${length} bytes)`))
    }, 30_000)
    socket.on('data', (/** @type {Buffer} */ chunk) => {
      chunks.push(chunk)
      length += chunk.length
      // The marker sits at the very end of what the server has sent so far (it streams nothing after it).
      const all = Buffer.concat(chunks)
      if (all.includes(MARKER)) {
        clearTimeout(timer)
        socket.destroy()
        resolve(all)
      }
    })
    socket.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    const extra = Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('')
    socket.write(`GET /stream HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n${extra}\r\n`)
  })
}

/** The last `id:` of a stream's text (the newest revision it delivered). @param {string} text */
function lastId(text) {
  const ids = [...text.matchAll(/^id: (\d+)$/gm)]
  const last = ids.at(-1)?.[1]
  if (last === undefined) throw new Error('the stream carried no id')
  return last
}

export async function measureResume() {
  const server = await startCli(FLAT_API_CLI)
  try {
    const flags = Array.from({ length: FLAGS }, (_, i) => makeFlag(i))
    await seedFlags(server.url, flags)
    const full = await readStream(server.url)
    const fullText = full.toString()
    const from = lastId(fullText)
    const updates = (fullText.match(/^event: update$/gm) ?? []).length
    if (updates !== FLAGS) throw new Error(`full bootstrap: ${updates} flags, expected ${FLAGS}`)
    // 10 changes while the client is away: each a PATCH of a different flag, one revision each.
    for (let i = 0; i < MISSED; i++) {
      const key = `flag-${String(i * 997).padStart(5, '0')}`
      const res = await fetch(`${server.url}/api/flags/${key}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ is_enabled: i % 2 === 0, rollout_percentage: (i * 13) % 101 }),
      })
      if (!res.ok) throw new Error(`PATCH ${key}: ${res.status} ${await res.text()}`)
      await res.arrayBuffer()
    }
    const resumed = await readStream(server.url, { 'Last-Event-ID': from })
    const resumedText = resumed.toString()
    if (!/\r\n\r\n[\s\S]*event: resumed\n/.test(resumedText)) throw new Error(`not a resumed stream:\n${resumedText}`)
    const missed = (resumedText.match(/^event: update$/gm) ?? []).length
    if (missed !== MISSED) throw new Error(`resumed stream carried ${missed} updates, expected ${MISSED}`)
    const ratio = resumed.length / full.length
    log(`resume: ${resumed.length} bytes for ${MISSED} missed changes vs ${full.length} for a full bootstrap`)
    return row({
      id: 'sse.resume.bytes_ratio',
      value: ratio,
      unit: 'ratio',
      baseline: null,
      ratio: null,
      goal: atMost(0.01),
      note: `bytes read off a raw socket (status line and headers included) from GET /stream until the completion comment, flat API CLI on SQLite with ${FLAGS.toLocaleString('en')} flags: reconnecting with Last-Event-ID ${from} after ${MISSED} PATCHes of other flags → ${resumed.length.toLocaleString('en')} bytes (resumed + the ${MISSED} missed updates), against a full bootstrap of the same server in the same run (no Last-Event-ID): ${full.length.toLocaleString('en')} bytes; value = resumed ÷ full`,
      extra: { resumedBytes: resumed.length, fullBytes: full.length, missed: MISSED, flags: FLAGS },
    })
  } finally {
    await server.stop()
  }
}
