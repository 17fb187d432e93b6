// stream.bootstrap10k.ms: a new /stream subscriber receiving `connected` plus 10 000 flags, from the request
// until the client has parsed the last of those events (fetch + eventsource-parser, in this process).
// Baseline: a bare node:http server sending the same bytes from memory.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createParser } from 'eventsource-parser'
import { atMost, benchMain, log, row } from './lib/cli.mjs'
import { makeFlag, seedFlags } from './lib/flags.mjs'
import { benchDir, FLAT_API_CLI, spawnNode, startCli, tempDir } from './lib/proc.mjs'
import { median, now } from './lib/stats.mjs'

const FLAGS = 10_000

/**
 * Opens a stream and resolves the ms until `count` events were parsed (and the raw text, when asked).
 * @param {string} url @param {number} count
 */
async function timeBootstrap(url, count, keepText = false) {
  const controller = new AbortController()
  const t0 = now()
  const res = await fetch(url, { headers: { accept: 'text/event-stream' }, signal: controller.signal })
  if (!res.ok || !res.body) throw new Error(`GET ${url}: ${res.status}`)
  let events = 0
  let connected = false
  let text = ''
  const parser = createParser({
    onEvent: (e) => {
      if (e.event === 'connected') connected = true
      events++
    },
  })
  const decoder = new TextDecoder()
  let ms = Number.NaN
  try {
    for await (const chunk of res.body) {
      const part = decoder.decode(chunk, { stream: true })
      if (keepText) text += part
      parser.feed(part)
      if (events >= count) {
        ms = now() - t0
        break
      }
    }
  } finally {
    controller.abort()
  }
  if (!connected || events < count) throw new Error(`got ${events} of ${count} events from ${url}`)
  return { ms, text }
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const runs = quick ? 3 : 7
  const ours = await startCli(FLAT_API_CLI)
  const tmp = tempDir('bootstrap')
  /** @type {{ stop(): Promise<void> } | undefined} */
  let bare
  try {
    await seedFlags(
      ours.url,
      Array.from({ length: FLAGS }, (_, i) => makeFlag(i)),
    )
    const count = FLAGS + 1
    const streamUrl = `${ours.url}/stream`
    // The first subscriber after a change builds the bootstrap chunk; later ones reuse it.
    const first = await timeBootstrap(streamUrl, count, true)
    const bytes = Buffer.byteLength(first.text)
    const file = join(tmp.dir, 'bootstrap.txt')
    writeFileSync(file, first.text)
    const proc = spawnNode(join(benchDir, 'servers/baseline-server.mjs'), ['buffer', file])
    bare = proc
    const bareUrl = /** @type {string} */ ((await proc.waitFor(/listening on (http:\/\/[\d.:]+)/))[1])
    await timeBootstrap(bareUrl, count)

    const warm = []
    const afterChange = []
    const base = []
    for (let i = 0; i < runs; i++) {
      warm.push((await timeBootstrap(streamUrl, count)).ms)
      base.push((await timeBootstrap(bareUrl, count)).ms)
      // A change makes the next subscriber rebuild the chunk.
      const res = await fetch(`${ours.url}/api/flags/flag-00001`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ is_enabled: i % 2 === 0 }),
      })
      if (!res.ok) throw new Error(`PATCH: ${res.status}`)
      await res.arrayBuffer()
      afterChange.push((await timeBootstrap(streamUrl, count)).ms)
    }
    const value = median(warm)
    const baseline = median(base)
    const cold = median(afterChange)
    log(
      `bootstrap: ours ${value.toFixed(1)} ms (after a change ${cold.toFixed(1)}), bare ${baseline.toFixed(1)} ms, ${bytes} bytes`,
    )
    return [
      row({
        id: 'stream.bootstrap10k.ms',
        value,
        unit: 'ms',
        baseline,
        ratio: baseline / value,
        goal: atMost(150),
        note: `connected + ${FLAGS} flags (${(bytes / 2 ** 20).toFixed(1)} MiB), request → last event parsed by fetch + eventsource-parser; median of ${runs}; bootstrap cached for the revision; baseline = bare node:http sending the same bytes`,
        extra: { bytes, runs: { ours: warm, baseline: base } },
      }),
      row({
        id: 'stream.bootstrap10k.after_change.ms',
        value: cold,
        unit: 'ms',
        baseline,
        ratio: baseline / cold,
        goal: atMost(150),
        note: 'the first subscriber after a flag change (the bootstrap chunk is rebuilt for the new revision)',
        extra: { runs: afterChange },
      }),
    ]
  } finally {
    await bare?.stop()
    await ours.stop()
    tmp.remove()
  }
}

benchMain(import.meta.url, run)
