import { build } from 'esbuild'
import { describe, expect, it } from 'vitest'
import { ENTRIES } from '../../scripts/bundle-size.mjs'

// `describeFlag` and `explain` serve dashboards and the flag service; the browser clients import the evaluator from
// the same package index, so they must stay tree-shaken out of every client bundle.
const SERVER_SIDE = ['packages/evaluation/src/describe-flag.ts', 'packages/evaluation/src/explain.ts']

describe('browser bundles leave out the evaluation package’s dashboard helpers', () => {
  for (const entry of ENTRIES.filter((e) => e.id.startsWith('bundle.'))) {
    it(`${entry.id} has no byte of describeFlag or explain`, async () => {
      const out = await build({
        stdin: { contents: entry.code, resolveDir: process.cwd(), loader: 'js' },
        bundle: true,
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
      const bundled = Object.values(out.metafile.outputs).flatMap((o) =>
        Object.entries(o.inputs)
          .filter(([, input]) => input.bytesInOutput > 0)
          .map(([path]) => path),
      )
      expect(bundled.length).toBeGreaterThan(0)
      expect(bundled.filter((path) => SERVER_SIDE.some((s) => path.endsWith(s)))).toEqual([])
    })
  }
})
