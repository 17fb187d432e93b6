// rest.list350.ratio: GET /api/flags (350 flags, ~100 KB) of the real server vs a bare node:http server sending the same cached bytes.
// rest.get.ratio: GET /api/flags/:key vs bare node:http answering the same flag's bytes from a Buffer (the ceiling:
// the route does not go through Express, so an Express baseline would flatter it).
// Every server is its own process; autocannon (50 connections, bounded runs) loads them from this one.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { atLeast, benchMain, log, row } from './lib/cli.mjs'
import { makeFlag, seedFlags } from './lib/flags.mjs'
import { loadTest } from './lib/load.mjs'
import { benchDir, FLAT_API_CLI, spawnNode, startCli, tempDir } from './lib/proc.mjs'
import { median } from './lib/stats.mjs'

/** @param {string} mode @param {string} file */
async function startBaseline(mode, file) {
  const proc = spawnNode(join(benchDir, 'servers/baseline-server.mjs'), [mode, file])
  const match = await proc.waitFor(/listening on (http:\/\/[\d.:]+)/)
  return { ...proc, url: /** @type {string} */ (match[1]) }
}

/** Approximate bytes of a response's header block (name: value CRLF each; the status line and Date aside). @param {Response} res */
function headerBytes(res) {
  let n = 0
  for (const [name, value] of res.headers) n += name.length + value.length + 4
  return n
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const duration = quick ? 1 : 3
  const rounds = quick ? 1 : 5
  const tmp = tempDir('rest')
  const ours = await startCli(FLAT_API_CLI)
  /** @type {Array<{ stop(): Promise<void> }>} */
  const started = [ours]
  try {
    const flags = Array.from({ length: 350 }, (_, i) => makeFlag(i))
    await seedFlags(ours.url, flags)
    const listRes = await fetch(`${ours.url}/api/flags`)
    const listBody = Buffer.from(await listRes.arrayBuffer())
    const served = JSON.parse(listBody.toString())
    if (served.length !== 350) throw new Error(`expected 350 flags, got ${served.length}`)
    const listFile = join(tmp.dir, 'list.json')
    writeFileSync(listFile, listBody)
    const key = 'flag-00123'
    const oneRes = await fetch(`${ours.url}/api/flags/${key}`)
    const one = await oneRes.text()
    // Header bytes are part of what each server writes per response; the note reports both.
    const oursHeaderBytes = headerBytes(oneRes)
    const oneFile = join(tmp.dir, 'one.json')
    writeFileSync(oneFile, one)

    const bare = await startBaseline('buffer', listFile)
    started.push(bare)
    const bareOne = await startBaseline('buffer', oneFile)
    started.push(bareOne)
    const checkRes = await fetch(`${bareOne.url}/api/flags/${key}`)
    const check = await checkRes.text()
    if (check !== one) throw new Error(`the bare baseline answers differently:\n${check}\n${one}`)
    const bareHeaderBytes = headerBytes(checkRes)

    const targets = {
      oursList: `${ours.url}/api/flags`,
      bareList: `${bare.url}/api/flags`,
      oursGet: `${ours.url}/api/flags/${key}`,
      bareGet: `${bareOne.url}/api/flags/${key}`,
    }
    /** @type {Record<string, number[]>} */
    const rps = { oursList: [], bareList: [], oursGet: [], bareGet: [] }
    /** @type {Record<string, number[]>} */
    const p99 = { oursList: [], bareList: [], oursGet: [], bareGet: [] }
    for (let round = 0; round < rounds; round++) {
      // Alternating order (ours first, then the baseline first), so a drift of the machine weighs on both alike.
      const order = round % 2 === 0 ? Object.entries(targets) : Object.entries(targets).reverse()
      for (const [name, url] of order) {
        const r = await loadTest({ url, duration, connections: 50, warmup: round === 0 ? 1 : 0 })
        rps[name].push(r.requestsPerSecond)
        p99[name].push(r.latencyP99)
        log(`rest ${name} round ${round + 1}: ${Math.round(r.requestsPerSecond)} req/s, p99 ${r.latencyP99} ms`)
      }
    }
    const m = Object.fromEntries(Object.entries(rps).map(([k, v]) => [k, median(v)]))
    /** The median of the per-round ratios: each round's pair ran back to back, under the same load. */
    const pairRatio = (/** @type {string} */ a, /** @type {string} */ b) =>
      median(rps[a].map((x, i) => x / (rps[b][i] ?? Number.NaN)))
    const mp99 = Object.fromEntries(Object.entries(p99).map(([k, v]) => [k, median(v)]))
    return [
      row({
        id: 'rest.list350.ratio',
        value: m.oursList,
        unit: 'req/s',
        baseline: m.bareList,
        ratio: pairRatio('oursList', 'bareList'),
        goal: atLeast(0.5, 'ratio'),
        note: `GET /api/flags with 350 flags (${listBody.length} bytes per response) of the flat API CLI, 50 connections, ${duration} s × ${rounds} interleaved with the baseline in alternating order, ratio = median of the per-round ratios; baseline = bare node:http sending the same bytes from a Buffer in the same run; runs ours ${rps.oursList.map((x) => Math.round(x)).join(', ')} vs baseline ${rps.bareList.map((x) => Math.round(x)).join(', ')} req/s`,
        extra: {
          p99Ms: { ours: mp99.oursList, baseline: mp99.bareList },
          runs: { ours: rps.oursList, baseline: rps.bareList },
        },
      }),
      row({
        id: 'rest.get.ratio',
        value: m.oursGet,
        unit: 'req/s',
        baseline: m.bareGet,
        ratio: pairRatio('oursGet', 'bareGet'),
        goal: atLeast(0.8, 'ratio'),
        note: `GET /api/flags/${key} (${one.length}-byte body, ~${oursHeaderBytes} bytes of headers: the API security set, ETag and Cache-Control) of the flat API CLI, 50 connections, ${duration} s × ${rounds} interleaved with the baseline in alternating order, ratio = median of the per-round ratios; baseline = bare node:http answering the same ${one.length} bytes from a Buffer (~${bareHeaderBytes} bytes of headers: Content-Type and Content-Length only) in the same run; runs ours ${rps.oursGet.map((x) => Math.round(x)).join(', ')} vs baseline ${rps.bareGet.map((x) => Math.round(x)).join(', ')} req/s`,
        extra: {
          p99Ms: { ours: mp99.oursGet, baseline: mp99.bareGet },
          runs: { ours: rps.oursGet, baseline: rps.bareGet },
          headerBytes: { ours: oursHeaderBytes, baseline: bareHeaderBytes },
        },
      }),
    ]
  } finally {
    for (const s of started) await s.stop()
    tmp.remove()
  }
}

benchMain(import.meta.url, run)
