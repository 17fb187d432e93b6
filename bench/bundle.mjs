// bundle.*: what an app adds when it imports a browser entry, gzip -9 bytes, measured by scripts/bundle-size.mjs
// (esbuild and rollup, minified, browser, ESM; the larger of the two). No baseline; the goal is the issue-17 budget.
import { measureBundles } from '../scripts/bundle-size.mjs'
import { atMost, benchMain, log, row } from './lib/cli.mjs'

/** @param {Awaited<ReturnType<typeof measureBundles>>[number]} r */
const lazyNote = (r) =>
  r.esbuild.lazy || r.rollup.lazy
    ? `; split off behind import() and loaded on first use: esbuild ${r.esbuild.lazy?.gz ?? 0} B gz, rollup ${r.rollup.lazy?.gz ?? 0} B gz`
    : ''

export async function run() {
  const rows = await measureBundles()
  for (const r of rows) log(`${r.id}: esbuild ${r.esbuild.gz} B gz, rollup ${r.rollup.gz} B gz (budget ${r.budget})`)
  return rows.map((r) =>
    row({
      id: `${r.id}.gz_bytes`,
      value: r.gz,
      unit: 'bytes gz',
      baseline: null,
      ratio: null,
      goal: atMost(r.budget),
      note: `${r.what}: the larger of esbuild and rollup (minified, browser, ESM, gzip -9), bundled from src/; what a page loads up front (entry chunk and the chunks it imports statically, each gzipped on its own)${lazyNote(r)}`,
      extra: { esbuild: r.esbuild, rollup: r.rollup, external: r.external },
    }),
  )
}

benchMain(import.meta.url, run)
