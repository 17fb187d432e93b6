// ofrep.refresh10k.p99_ms: one flag change reaching N OFREP refresh streams (GET /ofrep/v1/events?key=…) of the
// flat API CLI as a refetchEvaluation (PATCH /api/flags/:key → SQLite commit → change feed → OFREP refresh hub),
// p99 of send-to-arrival latency, against sse.fanout10k's baseline (bare node:http SSE server, POST /broadcast
// writes one frame to every stream) measured in the same run the same way. Server and clients are separate
// processes (20 000 open files each at most); rounds in ABBA order as sse-fanout.mjs.
import { join } from 'node:path'
import { atLeast, benchMain, log, row } from './lib/cli.mjs'
import { benchDir, spawnNode } from './lib/proc.mjs'
import { epochMs, median, sleep } from './lib/stats.mjs'
import { AUTH, OFREP_KEY, ofrepFlag, startOfrepServer } from './ofrep-flags.mjs'

const FLAG_KEY = 'ofrep-0002'

/** @param {'ours' | 'baseline'} kind */
async function startServer(kind) {
  if (kind === 'ours') {
    // The flat API's 350 bench flags; every change re-announces the whole set to each stream's provider.
    const server = await startOfrepServer(Array.from({ length: 350 }, (_, i) => ofrepFlag(i)))
    return {
      ...server,
      streamUrl: `${server.url}/ofrep/v1/events?key=${OFREP_KEY}`,
      readyMarker: 'HTTP/1.1 200',
      marker: 'refetchEvaluation',
      /** @param {number} seq */
      async trigger(seq) {
        const r = await fetch(`${server.url}/api/flags/${FLAG_KEY}`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json', ...AUTH },
          body: JSON.stringify({ description: `OFREP refresh bench change ${seq}` }),
        })
        if (!r.ok) throw new Error(`PATCH failed: ${r.status} ${await r.text()}`)
        await r.arrayBuffer()
      },
    }
  }
  const proc = spawnNode(join(benchDir, 'servers/baseline-server.mjs'), ['sse'])
  const url = /** @type {string} */ ((await proc.waitFor(/listening on (http:\/\/[\d.:]+)/))[1])
  return {
    ...proc,
    url,
    streamUrl: `${url}/stream`,
    readyMarker: 'event: connected',
    marker: 'event: update',
    /** sse-fanout.mjs's frame: a ~300-byte flag. @param {number} seq */
    async trigger(seq) {
      const flag = { key: 'bench-fanout', is_enabled: true, rollout_percentage: null, rules: [] }
      const description = `fanout:${seq} ${'x'.repeat(220)}`
      const r = await fetch(`${url}/broadcast`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...flag, description }),
      })
      await r.arrayBuffer()
    },
  }
}

/**
 * One server, `count` streams, `events` measured changes after one warm-up change.
 * @param {'ours' | 'baseline'} kind @param {number} count @param {number} events
 */
async function measure(kind, count, events) {
  const server = await startServer(kind)
  const clients = spawnNode(join(benchDir, 'ofrep-refresh-clients.mjs'), [], { ipc: true })
  try {
    const connected = await clients.request(
      { cmd: 'connect', url: server.streamUrl, count, readyMarker: server.readyMarker, marker: server.marker },
      150_000,
    )
    await sleep(500)
    const p99s = []
    const p50s = []
    let incomplete = 0
    for (let seq = 1; seq <= events + 1; seq++) {
      await clients.request({ cmd: 'arm', round: seq }, 10_000)
      const sentAt = epochMs()
      await server.trigger(seq)
      const r = await clients.request({ cmd: 'collect', sentAt, timeoutMs: 20_000 }, 30_000)
      if (!r.complete) incomplete++
      if (seq > 1) {
        p99s.push(r.p99)
        p50s.push(r.p50)
      }
      await sleep(200)
    }
    const result = { p99: median(p99s), p50: median(p50s), p99s, p50s, connectMs: connected.ms, incomplete }
    log(
      `ofrep refresh ${kind} n=${count}: p99 ${result.p99.toFixed(1)} ms (${p99s.map((x) => x.toFixed(0)).join(' ')}), ` +
        `p50 ${result.p50.toFixed(1)} ms, connect ${Math.round(connected.ms)} ms${incomplete ? `, ${incomplete} incomplete` : ''}`,
    )
    return result
  } finally {
    await clients.request({ cmd: 'close' }, 10_000).catch(() => {})
    await clients.stop()
    await server.stop()
  }
}

/** Two rounds of one server as one: medians over both rounds' changes. @param {any} a @param {any} b */
function pooled(a, b) {
  const p99s = [...a.p99s, ...b.p99s]
  const p50s = [...a.p50s, ...b.p50s]
  return { p99: median(p99s), p50: median(p50s), rounds: [a.p99, b.p99], incomplete: a.incomplete + b.incomplete }
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const count = quick ? 1000 : 10_000
  const events = quick ? 2 : 7
  let ours
  let baseline
  if (quick) {
    baseline = pooled(await measure('baseline', count, events), { p99s: [], p50s: [], p99: 0, incomplete: 0 })
    ours = pooled(await measure('ours', count, events), { p99s: [], p50s: [], p99: 0, incomplete: 0 })
  } else {
    // ABBA (baseline, ours, ours, baseline): a drift of the machine during the run weighs on both sides alike.
    const b1 = await measure('baseline', count, events)
    const o1 = await measure('ours', count, events)
    const o2 = await measure('ours', count, events)
    const b2 = await measure('baseline', count, events)
    ours = pooled(o1, o2)
    baseline = pooled(b1, b2)
  }
  const label = `${count / 1000}k`
  const rounds = (/** @type {number[]} */ r) => r.map((x) => x.toFixed(1)).join(' / ')
  return [
    row({
      id: `ofrep.refresh${label}.p99_ms`,
      value: ours.p99,
      unit: 'ms p99',
      baseline: baseline.p99,
      ratio: baseline.p99 / ours.p99,
      goal: atLeast(0.7, 'ratio'),
      note: `${count} OFREP refresh streams (GET /ofrep/v1/events?key=…, raw sockets in a separate client process) of the flat API CLI with 350 flags; ${quick ? `median of ${events} changes' p99` : `median of the p99s of ${2 * events} changes over two rounds per server in ABBA order (baseline, ours, ours, baseline; each round a fresh server and ${count} fresh streams; round medians ours ${rounds(ours.rounds)}, baseline ${rounds(baseline.rounds)} ms)`}; latency = arrival of the refetchEvaluation frame − the PATCH /api/flags/:key request's send time (SQLite commit → change feed → one frame to every stream); baseline = sse.fanout10k's bare node:http SSE server, POST /broadcast, measured by the same client the same way in the same run; p50 ours ${ours.p50.toFixed(1)} / baseline ${baseline.p50.toFixed(1)} ms${ours.incomplete + baseline.incomplete ? `; ${ours.incomplete + baseline.incomplete} changes did not reach every stream within 20 s` : ''}`,
      extra: { p50: { ours: ours.p50, baseline: baseline.p50 }, incomplete: ours.incomplete + baseline.incomplete },
    }),
  ]
}

benchMain(import.meta.url, run)
