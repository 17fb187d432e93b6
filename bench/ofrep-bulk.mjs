// ofrep.bulk350.ratio: POST /ofrep/v1/evaluate/flags (OFREP bulk evaluation) of the flat API CLI with 350 flags,
// every request a different random context (seeded PRNG), against bare node:http answering a precomputed body of
// the same size as our answer from a Buffer. Both servers are their own processes; autocannon loads them from this
// one with the same settings (50 connections, the same request bodies, bounded runs, 127.0.0.1 only).
import { writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { atLeast, benchMain, log, row } from './lib/cli.mjs'
import { benchDir, cpuMicros, spawnNode, tempDir } from './lib/proc.mjs'
import { median } from './lib/stats.mjs'
import { AUTH, ofrepFlag, randomContexts, startOfrepServer } from './ofrep-flags.mjs'

/** Unleash Edge's published figure: 6 900 req/s per CPU evaluating 350 features (their benchmark, not run here). */
const UNLEASH_EDGE_PER_CPU = 6900
const PATH = '/ofrep/v1/evaluate/flags'

/**
 * One bounded autocannon run of POSTs cycling through `bodies`; 2xx requests/s.
 * @param {string} base @param {string[]} bodies @param {number} duration
 */
function load(base, bodies, duration) {
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(base)) throw new Error(`refusing to load ${base}`)
  let next = 0
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: base,
        duration,
        connections: 50,
        pipelining: 1,
        requests: [
          {
            method: 'POST',
            path: PATH,
            headers: { 'content-type': 'application/json', ...AUTH },
            setupRequest: (/** @type {any} */ req) => {
              req.body = bodies[next++ % bodies.length]
              return req
            },
          },
        ],
      },
      (/** @type {Error | null} */ err, /** @type {any} */ result) => {
        if (err) return reject(err)
        if (result.non2xx > 0 || result.errors > 0 || result['2xx'] === 0) {
          return reject(new Error(`${base}: ${result['2xx']} 2xx, ${result.non2xx} non-2xx, ${result.errors} errors`))
        }
        resolve({ rps: result['2xx'] / (result.duration || duration), p99: result.latency.p99, answers: result['2xx'] })
      },
    )
  })
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const duration = quick ? 1 : 3
  const rounds = quick ? 1 : 5
  const tmp = tempDir('ofrep')
  const bodies = randomContexts(4096)
  const ours = await startOfrepServer(Array.from({ length: 350 }, (_, i) => ofrepFlag(i)))
  /** @type {Array<{ stop(): Promise<void> }>} */
  const started = [ours]
  try {
    // Our answers for a sample of the contexts: the baseline sends one of median size.
    const sizes = []
    /** @type {Record<string, number>} */
    const reasons = {}
    let sample = Buffer.alloc(0)
    for (const body of bodies.slice(0, 64)) {
      const res = await fetch(`${ours.url}${PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...AUTH },
        body,
      })
      if (res.status !== 200) throw new Error(`bulk evaluation answered ${res.status}: ${await res.text()}`)
      const bytes = Buffer.from(await res.arrayBuffer())
      const answer = JSON.parse(bytes.toString())
      if (answer.flags.length !== 350) throw new Error(`expected 350 flags, got ${answer.flags.length}`)
      for (const f of answer.flags) reasons[f.reason ?? f.errorCode] = (reasons[f.reason ?? f.errorCode] ?? 0) + 1
      sizes.push(bytes.length)
      if (sizes.length === 1) sample = bytes
    }
    const size = median(sizes)
    // The baseline's precomputed body: our first answer with a trailing `pad` field bringing it to the median size.
    const obj = JSON.parse(sample.toString())
    obj.pad = ''
    obj.pad = 'x'.repeat(Math.max(0, size - Buffer.byteLength(JSON.stringify(obj))))
    const baselineBody = Buffer.from(JSON.stringify(obj))
    const file = join(tmp.dir, 'bulk.json')
    writeFileSync(file, baselineBody)
    const bare = spawnNode(join(benchDir, 'servers/baseline-server.mjs'), ['buffer', file])
    started.push(bare)
    const bareUrl = /** @type {string} */ ((await bare.waitFor(/listening on (http:\/\/[\d.:]+)/))[1])

    const targets = { ours: ours.url, baseline: bareUrl }
    const pids = { ours: ours.pid, baseline: bare.pid }
    /** @type {Record<string, number[]>} */
    const rps = { ours: [], baseline: [] }
    /** Server CPU time per answer (µs), each run: steadier than req/s on a loaded machine. @type {Record<string, number[]>} */
    const cpuPerAnswer = { ours: [], baseline: [] }
    /** @type {Record<string, number[]>} */
    const p99 = { ours: [], baseline: [] }
    for (let round = 0; round < rounds; round++) {
      // Alternating order, so a drift of the machine weighs on both alike; a 1 s warm-up of each in the first round.
      const order = round % 2 === 0 ? Object.entries(targets) : Object.entries(targets).reverse()
      for (const [name, url] of order) {
        if (round === 0) await load(url, bodies, 1)
        const pid = /** @type {number} */ (pids[/** @type {'ours' | 'baseline'} */ (name)])
        const before = cpuMicros(pid)
        const r = /** @type {{ rps: number, p99: number, answers: number }} */ (await load(url, bodies, duration))
        cpuPerAnswer[name].push((cpuMicros(pid) - before) / r.answers)
        rps[name].push(r.rps)
        p99[name].push(r.p99)
        const used = Math.round(cpuPerAnswer[name].at(-1) ?? 0)
        log(
          `ofrep bulk ${name} round ${round + 1}: ${Math.round(r.rps)} req/s, p99 ${r.p99} ms, ${used} µs CPU per answer`,
        )
      }
    }
    const ratio = median(rps.ours.map((x, i) => x / (rps.baseline[i] ?? Number.NaN)))
    const oursRps = median(rps.ours)
    const cores = cpus().length
    const cpu = { ours: Math.round(median(cpuPerAnswer.ours)), baseline: Math.round(median(cpuPerAnswer.baseline)) }
    return [
      row({
        id: 'ofrep.bulk350.ratio',
        value: oursRps,
        unit: 'req/s',
        baseline: median(rps.baseline),
        ratio,
        goal: atLeast(0.5, 'ratio'),
        note: `flat API CLI (SQLite, SDK_KEY), POST ${PATH} with 350 flags (reasons over 64 sample contexts: ${Object.entries(
          reasons,
        )
          .map(([k, v]) => `${k} ${v}`)
          .join(
            ', ',
          )}), each request one of 4 096 random contexts (seeded), answers ${Math.min(...sizes)}–${Math.max(...sizes)} bytes (median ${size}); autocannon 50 connections, ${duration} s × ${rounds} interleaved with the baseline in alternating order, ratio = median of the per-round ratios; baseline = bare node:http answering a precomputed ${baselineBody.length}-byte body from a Buffer, same requests, same run; runs ours ${rps.ours.map((x) => Math.round(x)).join(', ')} vs baseline ${rps.baseline.map((x) => Math.round(x)).join(', ')} req/s; server CPU per answer (median) ours ${cpu.ours} µs, baseline ${cpu.baseline} µs; the server is one single-threaded process on a ${cores}-core machine shared with the load generator; Unleash Edge publishes ${UNLEASH_EDGE_PER_CPU} req/s per CPU for 350 features`,
        extra: {
          runs: rps,
          p99Ms: { ours: median(p99.ours), baseline: median(p99.baseline) },
          answerBytes: {
            min: Math.min(...sizes),
            median: size,
            max: Math.max(...sizes),
            baseline: baselineBody.length,
          },
          unleashEdgePerCpu: UNLEASH_EDGE_PER_CPU,
          cpuMicrosPerAnswer: cpu,
          cores,
        },
      }),
    ]
  } finally {
    for (const s of started) await s.stop()
    tmp.remove()
  }
}

benchMain(import.meta.url, run)
