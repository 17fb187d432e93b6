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
/** The README section (markdown table) for these rows. */
export function renderSection(rows: Awaited<ReturnType<typeof measureBundles>>): string
