import { build } from 'esbuild'
import { describe, expect, it } from 'vitest'
import { ENTRIES, measureApps, measureBundles, renderSection } from '../../scripts/bundle-size.mjs'

// The bundle budgets count what a page loads up front. The rare paths are split off behind `import()`; the
// measurement must keep it out of the first load, and must still count every chunk the entry imports statically
// (esbuild moves modules shared with the lazy chunk into a chunk of their own).

const syncEntry = ENTRIES.find((e) => e.id === 'bundle.sync_client')

/** The sync client bundled as one file, nothing split off. */
async function unsplit(): Promise<number> {
  if (!syncEntry) throw new Error('no bundle.sync_client entry')
  const out = await build({
    stdin: { contents: syncEntry.code, resolveDir: process.cwd(), loader: 'js' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    conditions: ['flagsync-source'],
    external: syncEntry.external,
    write: false,
    logLevel: 'silent',
  })
  return Buffer.byteLength(out.outputFiles[0]?.text ?? '')
}

describe('bundle-size: first load and lazy chunks', () => {
  it('keeps the sync client’s conflict handling out of the first load, and counts every eager chunk', async () => {
    const rows = await measureBundles()
    const sync = rows.find((r) => r.id === 'bundle.sync_client')
    if (!sync) throw new Error('no bundle.sync_client row')
    const whole = await unsplit()
    for (const figures of [sync.esbuild, sync.rollup]) {
      expect(figures.lazy).not.toBeNull()
      const lazy = figures.lazy as { min: number; gz: number }
      // The lazy chunk (lazy-ops.ts and what it imports) is about 8 kB minified: the lazy part, not a stray helper.
      expect(lazy.min).toBeGreaterThan(2000)
      expect(figures.min).toBeLessThan(whole - 2000)
      // First load and lazy chunk together are the whole client (give or take the chunks' import/export glue):
      // nothing the entry imports statically is left uncounted.
      expect(figures.min + lazy.min).toBeGreaterThan(whole * 0.97)
    }
    // Both flag clients load their IndexedDB impression queue (indexeddb-rows.ts, ~1.5 kB minified) on first use, the
    // rules-mode client its snapshot poller (~1 kB) too; esbuild emits the poller's chunk for the remote client's
    // bundle as well (the package entry imports both clients), though nothing there loads it. The evaluator has nothing
    // loaded later.
    for (const r of rows.filter((row) => row.id.startsWith('bundle.flag_client'))) {
      // The rules-mode client's lazy chunks hold both (over 2 kB): the poller is not in its first load.
      const least = r.id === 'bundle.flag_client' ? 2000 : 1000
      for (const figures of [r.esbuild, r.rollup]) {
        expect(figures.lazy?.min).toBeGreaterThan(least)
        expect(figures.lazy?.min).toBeLessThan(4000)
      }
    }
    const evaluate = rows.find((r) => r.id === 'bundle.evaluate')
    expect(evaluate?.esbuild.lazy).toBeNull()
    expect(evaluate?.rollup.lazy).toBeNull()
  }, 120_000)
})

describe('bundle-size: what an app pays', () => {
  it('builds a Vite app per README and counts the peers it loads up front, the lazy chunk apart', async () => {
    const [rows, apps] = await Promise.all([measureBundles(), measureApps()])
    const app = (id: string) => {
      const found = apps.find((a) => a.id === id)
      if (!found) throw new Error(`no ${id} app`)
      return found
    }
    const own = rows.find((r) => r.id === 'bundle.sync_client')
    if (!own) throw new Error('no bundle.sync_client row')
    // Dexie (about 30 kB gz) is in what the sync app loads up front, on top of the client's own code.
    expect(app('bundle.app_sync').vite.gz).toBeGreaterThan(own.gz + 20_000)
    expect(app('bundle.app_sync').vite.lazy?.min ?? 0).toBeGreaterThan(2000)
    // The React README's app holds both clients: more than either alone (React itself is external).
    expect(app('bundle.app_react').vite.gz).toBeGreaterThan(app('bundle.app_sync').vite.gz)
    expect(app('bundle.app_react').vite.gz).toBeGreaterThan(app('bundle.app_flag').vite.gz)
    expect(app('bundle.app_react').vite.gz).toBeLessThan(100_000)
    // The README table leads with the app figure, own code beside it, and states the lazy chunk once.
    const table = renderSection(rows, apps)
    const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`
    expect(table).toContain(
      `| ${app('bundle.app_sync').what} | ${kb(app('bundle.app_sync').vite.gz)} | ${kb(own.esbuild.gz)}`,
    )
    expect(table.split(kb(app('bundle.app_sync').vite.lazy?.gz ?? 0)).length).toBe(2)
  }, 120_000)
})
