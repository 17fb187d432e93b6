// Server CPU per OFREP bulk answer, measured apart from throughput: the flat API CLI (350 flags, SDK_KEY) and the
// bare node:http baseline of ofrep-bulk.mjs (a precomputed body of our median answer's size), each in its own
// process, loaded by a few keep-alive raw-socket connections sending the bench's random contexts one request at a
// time, so the servers never queue and the load generator stays cheap. The figure is each server's CPU time (user +
// system, from /proc) over a timed batch ÷ the answers in it; rounds alternate the two servers.
//   node bench/ofrep-cpu.mjs [--quick]                  # ours and the baseline, µs of server CPU per answer
//   BENCH_FLAT_API_CLI=<script> node bench/ofrep-cpu.mjs   # a variant server in place of the CLI (A/B a change)
//   BENCH_PROFILE=<dir> node bench/ofrep-cpu.mjs        # also a CPU profile of each server (.cpuprofile)
//   OFREP_CPU_REQUESTS=20000 OFREP_CPU_CONNECTIONS=4 node bench/ofrep-cpu.mjs
// Not part of `npm run bench` (no row in the table): a tool for finding where the bulk answer's time goes.
import { readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { log } from './lib/cli.mjs'
import { benchDir, cpuMicros, profileArgs, spawnNode, tempDir } from './lib/proc.mjs'
import { median } from './lib/stats.mjs'
import { OFREP_KEY, ofrepFlag, randomContexts, startOfrepServer } from './ofrep-flags.mjs'

const PATH = '/ofrep/v1/evaluate/flags'
const HEADER_END = Buffer.from('\r\n\r\n')

/** The raw bytes of one bulk POST with `body`, as autocannon sends it. @param {string} body */
function requestBytes(body) {
  const head =
    `POST ${PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `Authorization: Bearer ${OFREP_KEY}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`
  return Buffer.from(head + body)
}

/**
 * One keep-alive connection sending `requests` one after another (the next once the answer is whole); resolves
 * with the number of 200s. @param {string} url @param {Buffer[]} requests @param {number} start @param {number} count
 */
function connection(url, requests, start, count) {
  const { hostname, port } = new URL(url)
  if (hostname !== '127.0.0.1') throw new Error(`refusing to load ${url}`)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    socket.setNoDelay(true)
    let sent = 0
    let ok = 0
    /** @type {Buffer[]} */
    let chunks = []
    let have = 0
    let need = -1
    const send = () => socket.write(/** @type {Buffer} */ (requests[(start + sent++) % requests.length]))
    socket.on('connect', send)
    socket.on('error', reject)
    socket.on('data', (chunk) => {
      chunks.push(chunk)
      have += chunk.length
      if (need < 0) {
        const all = chunks.length === 1 ? chunk : Buffer.concat(chunks)
        chunks = [all]
        const end = all.indexOf(HEADER_END)
        if (end < 0) return
        const head = all.subarray(0, end).toString('latin1')
        if (head.startsWith('HTTP/1.1 200')) ok++
        const length = /\r\ncontent-length: *(\d+)/i.exec(head)
        need = end + 4 + Number(length?.[1] ?? 0)
      }
      if (have < need) return
      if (have > need) return reject(new Error('more bytes than one answer'))
      chunks = []
      have = 0
      need = -1
      if (sent < count) send()
      else {
        socket.end()
        resolve(ok)
      }
    })
  })
}

/**
 * `total` requests over `connections` connections; the server's CPU µs per answer.
 * @param {string} url @param {number} pid @param {Buffer[]} requests @param {number} total @param {number} connections
 */
async function measure(url, pid, requests, total, connections) {
  const each = Math.ceil(total / connections)
  const before = usage(pid)
  const started = process.hrtime.bigint()
  const oks = await Promise.all(
    Array.from({ length: connections }, (_, i) => connection(url, requests, i * each, each)),
  )
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  const answers = oks.reduce((a, b) => a + b, 0)
  if (answers !== each * connections) throw new Error(`${url}: ${answers} of ${each * connections} answered 200`)
  const after = usage(pid)
  return {
    cpu: (after.cpu - before.cpu) / answers,
    system: (after.system - before.system) / answers,
    faults: (after.faults - before.faults) / answers,
    rps: answers / seconds,
    rssMiB: after.rss / 1024,
  }
}

/** A process's CPU µs (user + system), system µs and minor page faults so far, from /proc/<pid>/stat. @param {number} pid */
function usage(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
  return { cpu: cpuMicros(pid), system: Number(fields[12]) * 10_000, faults: Number(fields[7]), rss }
}

const quick = process.argv.includes('--quick')
const total = Number(process.env.OFREP_CPU_REQUESTS ?? (quick ? 4000 : 20000))
const connections = Number(process.env.OFREP_CPU_CONNECTIONS ?? 4)
const rounds = Number(process.env.OFREP_CPU_ROUNDS ?? (quick ? 2 : 4))
const bodies = randomContexts(4096)
const requests = bodies.map(requestBytes)
const tmp = tempDir('ofrep-cpu')
const ours = await startOfrepServer(Array.from({ length: 350 }, (_, i) => ofrepFlag(i)))
/** @type {Array<{ stop(): Promise<void> }>} */
const started = [ours]
try {
  // The baseline's body: our first answer padded to the median size of 64 answers, as ofrep-bulk.mjs builds it.
  const sizes = []
  let sample = ''
  for (const body of bodies.slice(0, 64)) {
    const res = await fetch(`${ours.url}${PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${OFREP_KEY}` },
      body,
    })
    const text = await res.text()
    if (res.status !== 200) throw new Error(`bulk evaluation answered ${res.status}: ${text}`)
    sizes.push(Buffer.byteLength(text))
    if (sample === '') sample = text
  }
  const obj = JSON.parse(sample)
  obj.pad = ''
  obj.pad = 'x'.repeat(Math.max(0, median(sizes) - Buffer.byteLength(JSON.stringify(obj))))
  const file = join(tmp.dir, 'bulk.json')
  writeFileSync(file, JSON.stringify(obj))
  const bare = spawnNode(join(benchDir, 'servers/baseline-server.mjs'), ['buffer', file], {
    nodeArgs: profileArgs(),
  })
  started.push(bare)
  const bareUrl = /** @type {string} */ ((await bare.waitFor(/listening on (http:\/\/[\d.:]+)/))[1])
  const targets = /** @type {const} */ ([
    ['ours', ours.url, ours.pid],
    ['baseline', bareUrl, bare.pid],
  ])
  /** @type {Record<string, number[]>} */
  const cpu = { ours: [], baseline: [] }
  for (const [, url, pid] of targets) await measure(url, pid, requests, Math.min(total, 4000), connections) // warm-up
  for (let round = 0; round < rounds; round++) {
    for (const [name, url, pid] of round % 2 === 0 ? targets : [...targets].reverse()) {
      const r = await measure(url, pid, requests, total, connections)
      cpu[name]?.push(r.cpu)
      log(
        `ofrep cpu ${name} round ${round + 1}: ${r.cpu.toFixed(1)} µs CPU per answer (system ${r.system.toFixed(1)}), ${r.faults.toFixed(2)} page faults, ${Math.round(r.rps)} req/s, RSS ${Math.round(r.rssMiB)} MiB`,
      )
    }
  }
  const oursCpu = median(cpu.ours ?? [])
  const baseCpu = median(cpu.baseline ?? [])
  process.stdout.write(
    `${JSON.stringify({ oursMicros: +oursCpu.toFixed(1), baselineMicros: +baseCpu.toFixed(1), cpuRatio: +(baseCpu / oursCpu).toFixed(3), answerBytes: median(sizes), requests: total, connections })}\n`,
  )
} finally {
  for (const s of started) await s.stop()
  tmp.remove()
}
