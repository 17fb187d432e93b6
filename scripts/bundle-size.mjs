// Bundle sizes, two kinds. What an app pays: a small Vite app per package, built the way its README uses it, peers
// included (scripts/bundle-app.mjs). Own-code budgets: each browser entry bundled with esbuild and with rollup
// (minified, browser, ESM), its peers external. All gzip -9. `node scripts/bundle-size.mjs` prints the figures;
// `--check` fails when an entry's own code is over budget or the README section is missing or over budget (npm test;
// the app builds take about a second together, so it measures them too, without a budget);
// `--write` rewrites the README section between the bundle-size markers from this measurement.
// Everything is bundled from src/ (the `flagsync-source` condition), so no build is needed first. Code behind a
// dynamic `import()` is split off as the app's bundler would split it: the figures are what a page loads up front
// (the entry chunk and every chunk it imports statically, each gzipped on its own), and the split-off chunks apart.
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import nodeResolve from '@rollup/plugin-node-resolve'
import { build } from 'esbuild'
import { rollup } from 'rollup'
import esbuildPlugin from 'rollup-plugin-esbuild'
import { APPS, buildApp } from './bundle-app.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const README = join(root, 'README.md')
const START = '<!-- bundle-size:start -->'
const END = '<!-- bundle-size:end -->'

/** What an app imports, what it brings itself (external), and the gzip budget in bytes (1 kB = 1 000 bytes). */
export const ENTRIES = [
  {
    id: 'bundle.flag_client',
    what: '`createFlagClient` + `FlagsyncProvider`, every dependency but `@openfeature/web-sdk`',
    code: "export { createFlagClient, FlagsyncProvider } from '@flagsync/flag-client'",
    external: ['@openfeature/web-sdk'],
    budget: 15_000,
  },
  {
    id: 'bundle.flag_client_remote',
    what: '`createRemoteFlagClient` (remote evaluation: values, refresh stream, impressions), every dependency',
    code: "export { createRemoteFlagClient } from '@flagsync/flag-client'",
    external: [],
    budget: 8_000,
  },
  {
    id: 'bundle.sync_client',
    what: "`createSyncClient`, the sync client's own code (Dexie external)",
    code: "export { createSyncClient } from '@flagsync/sync-client'",
    external: ['dexie'],
    budget: 10_000,
  },
  {
    id: 'bundle.evaluate',
    what: '`evaluate` alone',
    code: "export { evaluate } from '@flagsync/evaluation'",
    external: [],
    budget: 3_000,
  },
]

const conditions = ['flagsync-source', 'browser', 'module', 'import', 'default']
const sizes = (/** @type {string} */ code) => ({
  min: Buffer.byteLength(code),
  gz: gzipSync(code, { level: 9 }).length,
})

/**
 * What a page pays on first load: the entry chunk and every chunk it imports statically (code split off behind a
 * dynamic `import()` is loaded only when that path runs, and is reported apart as `lazy`).
 * @param {{ name: string, code: string, imports: string[] }[]} chunks
 * @param {string} entryName
 */
function firstLoad(chunks, entryName) {
  const byName = new Map(chunks.map((c) => [c.name, c]))
  const eager = new Set([entryName])
  for (const name of eager) for (const next of byName.get(name)?.imports ?? []) if (byName.has(next)) eager.add(next)
  // Each chunk is a request of its own, compressed on its own: sum their sizes rather than gzip them together.
  const total = (/** @type {(c: typeof chunks[number]) => boolean} */ pick) =>
    chunks
      .filter(pick)
      .map((c) => sizes(c.code))
      .reduce((a, b) => ({ min: a.min + b.min, gz: a.gz + b.gz }), { min: 0, gz: 0 })
  const lazy = total((c) => !eager.has(c.name))
  return { ...total((c) => eager.has(c.name)), lazy: lazy.min === 0 ? null : lazy }
}

/** @param {typeof ENTRIES[number]} entry */
async function withEsbuild(entry) {
  const out = await build({
    stdin: { contents: entry.code, resolveDir: root, loader: 'js', sourcefile: 'entry.js' },
    bundle: true,
    splitting: true,
    outdir: 'out',
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    conditions: ['flagsync-source'],
    external: entry.external,
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
  const outputs = /** @type {Record<string, { entryPoint?: string, imports: { path: string, kind: string }[] }>} */ (
    out.metafile.outputs
  )
  const chunks = out.outputFiles.map((file) => {
    const name = Object.keys(outputs).find((key) => file.path.endsWith(key)) ?? file.path
    const meta = outputs[name]
    const imports = (meta?.imports ?? []).filter((i) => i.kind === 'import-statement').map((i) => i.path)
    return { name, code: file.text, imports, entry: meta?.entryPoint !== undefined }
  })
  const entryChunk = chunks.find((c) => c.entry) ?? chunks[0]
  return firstLoad(chunks, entryChunk?.name ?? '')
}

/** @param {typeof ENTRIES[number]} entry */
async function withRollup(entry) {
  const id = '\0entry'
  const bundle = await rollup({
    input: id,
    external: (source) => entry.external.some((e) => source === e || source.startsWith(`${e}/`)),
    plugins: [
      { name: 'entry', resolveId: (s) => (s === id ? id : null), load: (s) => (s === id ? entry.code : null) },
      nodeResolve({ browser: true, exportConditions: conditions, extensions: ['.ts', '.js', '.mjs'] }),
      esbuildPlugin({ target: 'es2022', minify: true, sourceMap: false }),
    ],
    onwarn: () => {},
  })
  const { output } = await bundle.generate({ format: 'esm' })
  await bundle.close()
  const chunks = output
    .filter((o) => o.type === 'chunk')
    .map((c) => ({ name: c.fileName, code: c.code, imports: c.imports, entry: c.isEntry }))
  return firstLoad(chunks, chunks.find((c) => c.entry)?.name ?? '')
}

/** Every entry with both bundlers' figures; `gz` is the larger of the two. */
export async function measureBundles() {
  const rows = []
  for (const entry of ENTRIES) {
    const [esbuild, rollupSizes] = await Promise.all([withEsbuild(entry), withRollup(entry)])
    const gz = Math.max(esbuild.gz, rollupSizes.gz)
    const ceiling = 'ceiling' in entry ? entry.ceiling : entry.budget
    rows.push({ ...entry, esbuild, rollup: rollupSizes, gz, over: gz > entry.budget, failing: gz > ceiling })
  }
  return rows
}

/** Every app of APPS built with Vite: what its page loads up front, and on first use (`lazy`). */
export async function measureApps() {
  const rows = []
  for (const app of APPS) {
    const chunks = await buildApp(root, app)
    rows.push({ ...app, vite: firstLoad(chunks, chunks.find((c) => c.entry)?.name ?? '') })
  }
  return rows
}

const kb = (/** @type {number} */ bytes) => `${(bytes / 1000).toFixed(1)} kB`

/** @param {Awaited<ReturnType<typeof measureBundles>>[number]} r */
const verdict = (r) =>
  r.failing ? 'OVER' : r.over ? `goal missed (fails past ${kb('ceiling' in r ? r.ceiling : r.budget)})` : 'within'

/**
 * The README table: one row per app (what its page loads, with its package's own code and budget beside it), then
 * the entries no app stands for; the sync client's lazy chunk once, below.
 * @param {Awaited<ReturnType<typeof measureBundles>>} rows
 * @param {Awaited<ReturnType<typeof measureApps>>} apps
 */
export function renderSection(rows, apps) {
  const lines = [
    '<!-- generated by `npm run bundle:size -- --write` from scripts/bundle-size.mjs; do not edit by hand -->',
    '| an app imports | its page loads up front (Vite build, gz) | own code (esbuild / rollup, gz) | own-code budget (gz) | |',
    '|---|---:|---:|---:|---|',
  ]
  const own = (/** @type {typeof rows[number] | undefined} */ r) =>
    r ? `${kb(r.esbuild.gz)} / ${kb(r.rollup.gz)} | ${kb(r.budget)} | ${verdict(r)}` : '— | — |'
  for (const app of apps) {
    lines.push(`| ${app.what} | ${kb(app.vite.gz)} | ${own(rows.find((r) => r.id === app.own))} |`)
  }
  for (const r of rows.filter((r) => !apps.some((a) => a.own === r.id))) lines.push(`| ${r.what} | — | ${own(r)} |`)
  const lazy = apps.find((a) => a.vite.lazy)?.vite.lazy
  if (lazy) {
    lines.push(
      '',
      `The sync client also has a ${kb(lazy.gz)} gz chunk (Vite build) that a page loads on first use of a rare path.`,
    )
  }
  return lines.join('\n')
}

function readmeSection() {
  const text = readFileSync(README, 'utf8')
  const i = text.indexOf(START)
  const j = text.indexOf(END)
  return { text, i, j, section: i >= 0 && j > i ? text.slice(i + START.length, j).trim() : null }
}

async function main() {
  const args = process.argv.slice(2)
  const rows = await measureBundles()
  const apps = await measureApps()
  for (const a of apps) {
    console.log(
      `${a.id.padEnd(20)} vite    ${kb(a.vite.gz).padStart(8)} gz up front${a.vite.lazy ? `, ${kb(a.vite.lazy.gz)} gz on first use` : ''}`,
    )
  }
  for (const r of rows) {
    console.log(
      `${r.id.padEnd(20)} esbuild ${kb(r.esbuild.gz).padStart(8)} gz  rollup ${kb(r.rollup.gz).padStart(8)} gz  budget ${kb(r.budget).padStart(8)}  ${r.failing ? 'OVER BUDGET' : r.over ? 'goal missed, under its ceiling' : 'ok'}`,
    )
  }
  const rendered = renderSection(rows, apps)
  const { text, i, j, section } = readmeSection()
  if (args.includes('--write')) {
    if (section === null) throw new Error(`README.md has no ${START} … ${END} section`)
    writeFileSync(README, `${text.slice(0, i + START.length)}\n${rendered}\n${text.slice(j)}`)
    console.log('README.md bundle section rewritten')
  }
  if (!args.includes('--check')) return
  const problems = rows
    .filter((r) => r.failing)
    .map((r) => `${r.id} is ${r.gz} bytes gz, over its ${'ceiling' in r ? r.ceiling : r.budget} budget`)
  if (section === null) problems.push(`README.md has no ${START} … ${END} section (npm run bundle:size -- --write)`)
  else if (section !== rendered) {
    // Stale figures are tolerated as long as what the README promises is still within budget.
    if (/\bOVER\b/.test(section)) problems.push('README.md bundle section shows an entry over budget')
    else console.log('note: README.md bundle figures are out of date (npm run bundle:size -- --write)')
  }
  if (problems.length > 0) {
    for (const p of problems) console.error(`bundle-size: ${p}`)
    process.exitCode = 1
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main()
