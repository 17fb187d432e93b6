// sse.fanout10k.ratio: one flag change reaching N subscribers of /stream, p99 of trigger-to-receipt latency,
// for the real flat API server (PATCH /api/flags/:key → SQLite commit → change feed → hub broadcast) and for a
// bare node:http SSE server (POST /broadcast → one write to every stream). Server and clients are separate
// processes (20 000 open files each at most). sse.rss_per_conn_bytes: server RSS with N streams minus with none, ÷ N.
import { join } from 'node:path'
import { atLeast, atMost, benchMain, log, row } from './lib/cli.mjs'
import { benchDir, FLAT_API_CLI, GC_SIGNAL_ARGS, settledRss, spawnNode, startCli } from './lib/proc.mjs'
import { epochMs, median, sleep } from './lib/stats.mjs'

const FLAG_KEY = 'bench-fanout'

/** The changed flag: its description carries the sequence number and the send time; ~300-byte frames. */
function fanoutFlag(seq) {
  const flag = { key: FLAG_KEY, is_enabled: true, rollout_percentage: null, description: '', rules: [] }
  const marker = `fanout:${seq}:${epochMs().toFixed(3)}`
  flag.description = `${marker} ${'x'.repeat(Math.max(0, 230 - marker.length - 1))}`
  return flag
}

/** @param {'ours' | 'baseline'} kind */
async function startServer(kind) {
  if (kind === 'ours') {
    const server = await startCli(FLAT_API_CLI, {}, { nodeArgs: GC_SIGNAL_ARGS })
    const res = await fetch(`${server.url}/api/flags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(fanoutFlag(0)),
    })
    if (!res.ok) throw new Error(`creating the flag failed: ${res.status} ${await res.text()}`)
    return {
      ...server,
      readyMarker: 'bootstrap complete',
      /** @param {number} seq */
      async trigger(seq) {
        const { description } = fanoutFlag(seq)
        const r = await fetch(`${server.url}/api/flags/${FLAG_KEY}`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ description }),
        })
        if (!r.ok) throw new Error(`PATCH failed: ${r.status}`)
        await r.arrayBuffer()
      },
    }
  }
  const proc = spawnNode(join(benchDir, 'servers/baseline-server.mjs'), ['sse'], { nodeArgs: GC_SIGNAL_ARGS })
  const match = await proc.waitFor(/listening on (http:\/\/[\d.:]+)/)
  const url = /** @type {string} */ (match[1])
  return {
    ...proc,
    url,
    readyMarker: 'event: connected',
    /** @param {number} seq */
    async trigger(seq) {
      const r = await fetch(`${url}/broadcast`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(fanoutFlag(seq)),
      })
      await r.arrayBuffer()
    },
  }
}

/**
 * One server, `count` subscribers, `events` measured changes after one warm-up change.
 * @param {'ours' | 'baseline'} kind
 * @param {number} count
 * @param {number} events
 */
async function measure(kind, count, events) {
  const server = await startServer(kind)
  const clients = spawnNode(join(benchDir, 'sse-clients.mjs'), [], { ipc: true })
  try {
    // Warm the server up (one short stream, a few requests) before its idle RSS is read.
    await server.trigger(1)
    await sleep(300)
    const rssIdle = await settledRss(server.pid)
    const connected = await clients.request(
      { cmd: 'connect', url: `${server.url}/stream`, count, readyMarker: server.readyMarker },
      120_000,
    )
    await sleep(500)
    const rssOpen = await settledRss(server.pid)
    const p99s = []
    const p50s = []
    let incomplete = 0
    for (let seq = 2; seq <= events + 2; seq++) {
      await server.trigger(seq)
      const r = await clients.request({ cmd: 'collect', seq, timeoutMs: 20_000 }, 30_000)
      if (!r.complete) incomplete++
      if (seq > 2) {
        p99s.push(r.p99)
        p50s.push(r.p50)
      }
      await sleep(200)
    }
    const result = {
      p99: median(p99s),
      p50: median(p50s),
      p99s,
      p50s,
      rssPerConn: (rssOpen - rssIdle) / count,
      rssIdle,
      rssOpen,
      connectMs: connected.ms,
      incomplete,
    }
    log(
      `sse ${kind} n=${count}: p99 ${result.p99.toFixed(1)} ms, p50 ${result.p50.toFixed(1)} ms, ` +
        `${Math.round(result.rssPerConn)} B/conn, connect ${Math.round(connected.ms)} ms${incomplete ? `, ${incomplete} incomplete` : ''}`,
    )
    return result
  } finally {
    await clients.request({ cmd: 'close' }, 10_000).catch(() => {})
    await clients.stop()
    await server.stop()
  }
}

/** Two rounds of one server as one: medians over both rounds' changes, the RSS of the first. @param {any} a @param {any} b */
function pooled(a, b) {
  const p99s = [...a.p99s, ...b.p99s]
  const p50s = [...a.p50s, ...b.p50s]
  return {
    ...a,
    p99: median(p99s),
    p50: median(p50s),
    p99s,
    p50s,
    rounds: [a.p99, b.p99],
    incomplete: a.incomplete + b.incomplete,
  }
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const sizes = quick ? [500, 2000] : [1000, 5000, 10_000]
  const events = quick ? 2 : 3
  // The goal's size gets more changes and two rounds per server in ABBA order (baseline, ours, ours, baseline), so a
  // drift of the machine during the run weighs on both sides alike; its p99 is the median over every change.
  const topEvents = quick ? events : 7
  /** @type {Record<number, {ours: any, baseline: any}>} */
  const bySize = {}
  for (const n of sizes) {
    if (n !== sizes[sizes.length - 1] || quick) {
      const baseline = await measure('baseline', n, events)
      const ours = await measure('ours', n, events)
      bySize[n] = { ours, baseline }
      continue
    }
    const b1 = await measure('baseline', n, topEvents)
    const o1 = await measure('ours', n, topEvents)
    const o2 = await measure('ours', n, topEvents)
    const b2 = await measure('baseline', n, topEvents)
    bySize[n] = { ours: pooled(o1, o2), baseline: pooled(b1, b2) }
  }
  const top = sizes[sizes.length - 1]
  const { ours, baseline } = bySize[top]
  const series = {
    sizes,
    ours: sizes.map((n) => bySize[n].ours.p99),
    baseline: sizes.map((n) => bySize[n].baseline.p99),
  }
  const label = top >= 1000 ? `${top / 1000}k` : String(top)
  const rows = [
    row({
      id: quick ? `sse.fanout${label}.ratio` : 'sse.fanout10k.ratio',
      value: ours.p99,
      unit: 'ms p99',
      baseline: baseline.p99,
      ratio: baseline.p99 / ours.p99,
      goal: atLeast(0.7, 'ratio'),
      note: `${top} subscribers, ${quick ? `median of ${events} changes' p99` : `median of the p99s of ${2 * topEvents} changes over two rounds per server in ABBA order (baseline, ours, ours, baseline; each round a fresh server and ${top} fresh streams; round medians ours ${ours.rounds.map((/** @type {number} */ x) => x.toFixed(1)).join(' / ')}, baseline ${baseline.rounds.map((/** @type {number} */ x) => x.toFixed(1)).join(' / ')} ms)`} (trigger request sent → event parsed by the client process); ours = PATCH through SQLite, baseline = bare node:http POST /broadcast; p50 ours ${ours.p50.toFixed(1)} / baseline ${baseline.p50.toFixed(1)} ms`,
      extra: {
        series,
        p50: { ours: ours.p50, baseline: baseline.p50 },
        incomplete: ours.incomplete + baseline.incomplete,
      },
    }),
    row({
      id: 'sse.rss_per_conn_bytes',
      value: ours.rssPerConn,
      unit: 'bytes/conn',
      baseline: baseline.rssPerConn,
      ratio: baseline.rssPerConn / ours.rssPerConn,
      goal: atMost(20_000),
      note: `(VmRSS with ${top} streams − VmRSS idle) ÷ ${top}, from /proc of the server process, each read after a full GC in it; ours ${Math.round(ours.rssIdle / 2 ** 20)}→${Math.round(ours.rssOpen / 2 ** 20)} MiB, baseline ${Math.round(baseline.rssIdle / 2 ** 20)}→${Math.round(baseline.rssOpen / 2 ** 20)} MiB`,
    }),
  ]
  for (const n of sizes.slice(0, -1)) {
    const l = n >= 1000 ? `${n / 1000}k` : String(n)
    rows.push(
      row({
        id: `sse.fanout${l}.p99_ms`,
        value: bySize[n].ours.p99,
        unit: 'ms p99',
        baseline: bySize[n].baseline.p99,
        ratio: bySize[n].baseline.p99 / bySize[n].ours.p99,
        note: `${n} subscribers (for the chart)`,
      }),
    )
  }
  return rows
}

benchMain(import.meta.url, run)
