// Browser bundles. tsc -b (run first by `npm run build`) emits per-file ESM and
// declarations into each package's dist/; rollup turns the browser packages into
// publishable bundles and the examples into single files a page can load.
import { readFileSync } from 'node:fs'
import nodeResolve from '@rollup/plugin-node-resolve'
import { dts } from 'rollup-plugin-dts'
import esbuild from 'rollup-plugin-esbuild'

const pkg = (dir) => JSON.parse(readFileSync(new URL(`./${dir}/package.json`, import.meta.url), 'utf8'))

/** Every dependency of a published library stays external: the app's bundler dedupes them. */
const externalsOf = (dir) => {
  const deps = Object.keys(pkg(dir).dependencies ?? {})
  return (id) => deps.some((d) => id === d || id.startsWith(`${d}/`))
}

const browserResolve = () => nodeResolve({ browser: true, exportConditions: ['browser', 'import', 'default'] })

const library = (dir, name) => [
  {
    input: `${dir}/dist/index.js`,
    external: externalsOf(dir),
    output: [
      { file: `${dir}/dist/bundle/${name}.mjs`, format: 'es', sourcemap: true },
      { file: `${dir}/dist/bundle/${name}.cjs`, format: 'cjs', sourcemap: true },
    ],
  },
  {
    input: `${dir}/dist/index.d.ts`,
    external: externalsOf(dir),
    output: { file: `${dir}/dist/bundle/${name}.d.ts`, format: 'es' },
    plugins: [dts()],
  },
  // Everything inlined and minified: what a page pays for when it loads the client alone.
  {
    input: `${dir}/dist/index.js`,
    output: { file: `${dir}/dist/bundle/${name}.browser.min.js`, format: 'es', sourcemap: true },
    plugins: [browserResolve(), esbuild({ minify: true, target: 'es2022' })],
  },
]

export default [...library('packages/sync-client', 'sync-client')]
