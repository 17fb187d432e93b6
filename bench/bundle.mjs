// bundle.*: gzip -9 bytes, measured by scripts/bundle-size.mjs (no baseline). `bundle.app_*`: what a small Vite app
// built as the package's README uses it loads up front, peers included (no goal: they follow the peers' sizes);
// the other rows: a browser entry's own code, the larger of esbuild and rollup (minified, browser, ESM), against its
// budget.
import { measureApps, measureBundles } from '../scripts/bundle-size.mjs'
import { atMost, benchMain, log, row } from './lib/cli.mjs'

/** @param {Awaited<ReturnType<typeof measureBundles>>[number]} r */
const lazyNote = (r) =>
  r.esbuild.lazy || r.rollup.lazy
    ? `; split off behind import() and loaded on first use: esbuild ${r.esbuild.lazy?.gz ?? 0} B gz, rollup ${r.rollup.lazy?.gz ?? 0} B gz`
    : ''

export async function run() {
  const apps = await measureApps()
  for (const a of apps) log(`${a.id}: vite ${a.vite.gz} B gz up front, ${a.vite.lazy?.gz ?? 0} B gz on first use`)
  const rows = await measureBundles()
  for (const r of rows) log(`${r.id}: esbuild ${r.esbuild.gz} B gz, rollup ${r.rollup.gz} B gz (budget ${r.budget})`)
  return [
    ...apps.map((a) =>
      row({
        id: `${a.id}.gz_bytes`,
        value: a.vite.gz,
        unit: 'bytes gz',
        baseline: null,
        ratio: null,
        note: `${a.what}: a Vite app (production build, React external) whose page imports it as its README does, bundled from src/; what the page loads up front (entry chunk and the chunks it imports statically, each gzipped on its own)${a.vite.lazy ? `; loaded on first use: ${a.vite.lazy.gz} B gz` : ''}`,
        extra: { vite: a.vite },
      }),
    ),
    ...rows.map((r) =>
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
    ),
  ]
}

benchMain(import.meta.url, run)
