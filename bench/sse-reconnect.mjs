// sse.reconnect10k.s: 10 000 subscribers of /stream (in a separate client process) on the flat API CLI with 1 000
// flags; the server is killed (SIGKILL) and started again on the same port and SQLite file; seconds from the kill
// until every subscriber has its full bootstrap again. Baseline: a bare node:http server answering /stream with the
// same bytes (captured from ours) from one Buffer, killed and restarted the same way, to the same clients.
// sse.reconnect10k.peak_rss_mib: the restarted server's peak RSS (VmHWM) over the herd; the bootstrap is one shared
// Buffer, so it must not grow with the subscribers' count × the bootstrap's size.
// sse.resume.bytes_ratio: a Last-Event-ID reconnect after 10 missed changes vs a full bootstrap (sse-reconnect-resume.mjs).
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { atLeast, atMost, benchMain, log, row } from './lib/cli.mjs'
import { makeFlag, seedFlags } from './lib/flags.mjs'
import { benchDir, FLAT_API_CLI, profileArgs, repoRoot, spawnNode, tempDir } from './lib/proc.mjs'
import { epochMs, median, sleep } from './lib/stats.mjs'
import { measureResume } from './sse-reconnect-resume.mjs'

const FLAGS = 1000
const MARKER = 'bootstrap complete'

/** Peak and current resident set of a process, bytes (VmHWM / VmRSS of /proc/<pid>/status). @param {number} pid */
function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (/** @type {string} */ name) =>
    Number(new RegExp(`${name}:\\s+(\\d+)\\s+kB`).exec(status)?.[1] ?? Number.NaN)
  return { peak: kb('VmHWM') * 1024, rss: kb('VmRSS') * 1024 }
}

/**
 * A server that can be killed and started again on the same port (and, for ours, the same SQLite file).
 * @param {'ours' | 'baseline'} kind @param {string} dir @param {string} [bootstrapFile]
 */
function restartable(kind, dir, bootstrapFile) {
  let port = 0
  /** @type {import('./lib/proc.mjs').Child | undefined} */
  let proc
  return {
    get pid() {
      return /** @type {import('./lib/proc.mjs').Child} */ (proc).pid
    },
    get url() {
      return `http://127.0.0.1:${port}`
    },
    async start() {
      proc =
        kind === 'ours'
          ? spawnNode(join(repoRoot, FLAT_API_CLI), [], {
              nodeArgs: profileArgs(),
              env: {
                HOST: '127.0.0.1',
                PORT: String(port),
                LOG_LEVEL: 'info',
                DATABASE_URL: `sqlite:${join(dir, 'flags.sqlite')}`,
                // Set explicitly: the default cap may sit at (or below) the subscribers' count.
                STREAM_MAX_CONNECTIONS: '20000',
                STREAM_KEEPALIVE_MS: '600000',
              },
            })
          : spawnNode(join(benchDir, 'servers/baseline-server.mjs'), ['sse-bootstrap', String(bootstrapFile)], {
              env: { BASELINE_PORT: String(port) },
            })
      const match = await proc.waitFor(/listening on http:\/\/[\d.]+:(\d+)/, 30_000)
      port = Number(match[1])
    },
    async kill() {
      await proc?.stop()
    },
  }
}

/** Reads one bootstrap off a live /stream: everything up to and including the completion comment. @param {string} url */
async function captureBootstrap(url) {
  const controller = new AbortController()
  const res = await fetch(`${url}/stream`, { headers: { accept: 'text/event-stream' }, signal: controller.signal })
  if (!res.ok || !res.body) throw new Error(`GET /stream: ${res.status}`)
  let text = ''
  const decoder = new TextDecoder()
  try {
    for await (const chunk of res.body) {
      text += decoder.decode(chunk, { stream: true })
      const end = text.indexOf(MARKER)
      if (end >= 0) {
        const close = text.indexOf('\n\n', end)
        if (close >= 0) return text.slice(0, close + 2)
      }
    }
  } finally {
    controller.abort()
  }
  throw new Error('the stream ended before its bootstrap was complete')
}

/**
 * Connects the subscribers, then kills and restarts the server `restarts` times (fewer if slow).
 * @param {ReturnType<typeof restartable>} server @param {number} count @param {number} minBytes @param {number} restarts
 */
async function measure(server, count, minBytes, restarts, label = '') {
  const clients = spawnNode(join(benchDir, 'sse-reconnect-clients.mjs'), [], { ipc: true })
  try {
    const connected = await clients.request(
      { cmd: 'connect', url: `${server.url}/stream`, count, marker: MARKER, minBytes },
      180_000,
    )
    log(`reconnect ${label}: ${count} subscribers bootstrapped in ${Math.round(connected.ms)} ms`)
    const runs = []
    const started = Date.now()
    for (let i = 0; i < restarts && (i === 0 || Date.now() - started < 60_000); i++) {
      await sleep(500)
      const before = memoryOf(server.pid)
      await clients.request({ cmd: 'arm' })
      const killedAt = epochMs()
      await server.kill()
      await server.start()
      const listeningAt = epochMs()
      const r = await clients.request({ cmd: 'wait', timeoutMs: 150_000 }, 160_000)
      if (!r.complete) throw new Error(`${label}: only ${r.done} of ${count} subscribers got their bootstrap again`)
      const memory = memoryOf(server.pid)
      const run = {
        seconds: (r.lastAt - killedAt) / 1000,
        p50Seconds: (r.p50At - killedAt) / 1000,
        restartSeconds: (listeningAt - killedAt) / 1000,
        peakRss: memory.peak,
        rssBefore: before.rss,
        attempts: r.attempts,
        refused: r.refused,
      }
      log(
        `reconnect ${label} restart ${i + 1}: all bootstrapped ${run.seconds.toFixed(2)} s after the kill (p50 ${run.p50Seconds.toFixed(2)} s, ready after ${run.restartSeconds.toFixed(2)} s), peak RSS ${Math.round(run.peakRss / 2 ** 20)} MiB, ${run.attempts} connection attempts (${run.refused} refused)`,
      )
      runs.push(run)
    }
    return runs
  } finally {
    await clients.request({ cmd: 'close' }, 20_000).catch(() => {})
    await clients.stop()
  }
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const count = Number(process.env.BENCH_RECONNECT_COUNT) || (quick ? 1000 : 10_000)
  const restarts = quick ? 1 : 2
  // First, on its own server: the herd below leaves the machine busy for a while.
  const resume = await measureResume()
  const tmp = tempDir('reconnect')
  const ours = restartable('ours', tmp.dir)
  /** @type {ReturnType<typeof restartable> | undefined} */
  let bare
  try {
    await ours.start()
    await seedFlags(
      ours.url,
      Array.from({ length: FLAGS }, (_, i) => makeFlag(i)),
    )
    const bootstrap = await captureBootstrap(ours.url)
    const bytes = Buffer.byteLength(bootstrap)
    const file = join(tmp.dir, 'bootstrap.txt')
    writeFileSync(file, bootstrap)
    const oursRuns = await measure(ours, count, bytes, restarts, 'ours')
    await ours.kill()

    bare = restartable('baseline', tmp.dir, file)
    await bare.start()
    const baseRuns = await measure(bare, count, bytes, restarts, 'baseline')

    const secs = (/** @type {any[]} */ runs) => runs.map((r) => r.seconds)
    const value = median(secs(oursRuns))
    const baseline = median(secs(baseRuns))
    const list = (/** @type {number[]} */ xs, digits = 2) => xs.map((x) => x.toFixed(digits)).join(', ')
    const peakMiB = (/** @type {any[]} */ runs) => Math.max(...runs.map((r) => r.peakRss)) / 2 ** 20
    const label = count >= 1000 ? `${count / 1000}k` : String(count)
    const common = `${count.toLocaleString('en')} raw-socket subscribers in a separate process, each reconnecting 100–500 ms (uniform) after a close or failed attempt, ${FLAGS} flags (${bytes.toLocaleString('en')}-byte bootstrap)`
    return [
      resume,
      row({
        id: `sse.reconnect${label}.s`,
        value,
        unit: 's',
        baseline,
        ratio: baseline / value,
        goal: atLeast(0.7, 'ratio'),
        note: `${common}; SIGKILL of the flat API CLI → restart on the same port and SQLite file (STREAM_MAX_CONNECTIONS=20000) → every subscriber has a 200 and its full bootstrap again; ours ${list(secs(oursRuns))} s over ${oursRuns.length} restart(s) (median; ready again after ${list(oursRuns.map((r) => r.restartSeconds))} s — its 'listening on' line, printed once the flags are loaded; the port is bound and connections held from early in the start — p50 subscriber ${list(oursRuns.map((r) => r.p50Seconds))} s); baseline = bare node:http sending the same bytes from one Buffer, killed and restarted the same way in the same run: ${list(secs(baseRuns))} s (listening after ${list(baseRuns.map((r) => r.restartSeconds))} s); both timed from the kill to the last subscriber's full bootstrap, in the client process`,
        extra: { runs: { ours: oursRuns, baseline: baseRuns } },
      }),
      row({
        id: `sse.reconnect${label}.peak_rss_mib`,
        value: peakMiB(oursRuns),
        unit: 'MiB',
        baseline: peakMiB(baseRuns),
        ratio: peakMiB(baseRuns) / peakMiB(oursRuns),
        goal: atMost(1024),
        note: `peak resident set (VmHWM from /proc) of the restarted flat API process while ${count.toLocaleString('en')} subscribers reconnected and took their bootstrap, highest over ${oursRuns.length} restart(s): ${list(
          oursRuns.map((r) => r.peakRss / 2 ** 20),
          0,
        )} MiB; baseline = the bare server's, same herd: ${list(
          baseRuns.map((r) => r.peakRss / 2 ** 20),
          0,
        )} MiB; ${count.toLocaleString('en')} private copies of the bootstrap would be ${Math.round((count * bytes) / 2 ** 20).toLocaleString('en')} MiB`,
      }),
    ]
  } finally {
    await ours.kill()
    await bare?.kill()
    tmp.remove()
  }
}

benchMain(import.meta.url, run)
