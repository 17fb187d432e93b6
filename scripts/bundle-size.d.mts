/** Figures of one bundler: what a page loads up front, and what is split off behind `import()` (null: nothing). */
export interface BundleFigures {
  min: number
  gz: number
  lazy: { min: number; gz: number } | null
}
/** A browser entry: what an app imports, what it brings itself, and its gzip budget (and ceiling while over it). */
export interface BundleEntry {
  id: string
  what: string
  code: string
  external: string[]
  budget: number
  ceiling?: number
}
export const ENTRIES: readonly BundleEntry[]
/** Every entry with both bundlers' figures; `gz` is the larger of the two. */
export function measureBundles(): Promise<
  (BundleEntry & { esbuild: BundleFigures; rollup: BundleFigures; gz: number; over: boolean; failing: boolean })[]
>
/** A small Vite app that imports a package as its README does (scripts/bundle-app.mjs). */
export interface BundleApp {
  id: string
  /** The ENTRIES id of the package's own code, or null. */
  own: string | null
  what: string
  file: string
  main: string
}
/** Every app built with Vite: what its page loads up front (`lazy`: on first use). */
export function measureApps(): Promise<(BundleApp & { vite: BundleFigures })[]>
/** The README section (markdown table) for these rows and apps. */
export function renderSection(
  rows: Awaited<ReturnType<typeof measureBundles>>,
  apps: Awaited<ReturnType<typeof measureApps>>,
): string
