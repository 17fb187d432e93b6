// Browser bundles. tsc -b (run first by `npm run build`) emits per-file ESM and
// declarations into each package's dist/ (what the packages publish); rollup turns the sync client into
// single-file bundles in dist/bundle/ (loaded by the e2e tests and bench/, not published) and the examples into
// single files a page can load.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import nodeResolve from '@rollup/plugin-node-resolve'
import { dts } from 'rollup-plugin-dts'
import esbuild from 'rollup-plugin-esbuild'

const pkg = (dir) => JSON.parse(readFileSync(new URL(`./${dir}/package.json`, import.meta.url), 'utf8'))

/** Every dependency and peer of a published library stays external: the app's bundler dedupes them. */
const externalsOf = (dir) => {
  const { dependencies = {}, peerDependencies = {} } = pkg(dir)
  const deps = [...Object.keys(dependencies), ...Object.keys(peerDependencies)]
  return (id) => deps.some((d) => id === d || id.startsWith(`${d}/`))
}

/**
 * Dexie's `import` entry is a wrapper around its UMD build (to dedupe CJS/ESM
 * copies in Node), which rollup cannot import without a CommonJS plugin; a
 * bundle holds one copy anyway, so take Dexie's own ES module build.
 */
const dexieEsm = () => ({
  name: 'dexie-esm',
  resolveId(source, importer) {
    if (source !== 'dexie') return null
    return this.resolve('dexie/dist/dexie.mjs', importer, { skipSelf: true })
  },
})

const browserResolve = () => [
  dexieEsm(),
  nodeResolve({ browser: true, exportConditions: ['browser', 'import', 'default'] }),
]

const library = (dir, name) => [
  {
    input: `${dir}/dist/index.js`,
    external: externalsOf(dir),
    // ESM only, like the package: CommonJS callers on Node 20.19+ load it with require(esm), bundlers take ESM.
    // One file: code the package splits off behind `import()` (the sync client's conflict handling) is inlined here;
    // apps bundling dist/index.js keep it as a chunk of its own.
    output: { file: `${dir}/dist/bundle/${name}.mjs`, format: 'es', sourcemap: true, inlineDynamicImports: true },
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
    output: {
      file: `${dir}/dist/bundle/${name}.browser.min.js`,
      format: 'es',
      sourcemap: true,
      inlineDynamicImports: true,
    },
    plugins: [browserResolve(), esbuild({ minify: true, target: 'es2022' })],
  },
]

/**
 * Copies a web app's public/ folder next to its bundle. The service worker's
 * `__SHELL_VERSION__` becomes a hash of everything emitted, so each build that
 * changes the shell installs a fresh offline cache.
 */
const appShell = (publicDir) => ({
  name: 'flagsync-app-shell',
  buildStart() {
    for (const file of readdirSync(publicDir)) this.addWatchFile(`${publicDir}/${file}`)
  },
  generateBundle(_options, bundle) {
    const files = readdirSync(publicDir).sort()
    const hash = createHash('sha256')
    for (const name of Object.keys(bundle).sort()) {
      const out = bundle[name]
      hash.update(name).update(out.type === 'chunk' ? out.code : out.source)
    }
    for (const file of files) hash.update(file).update(readFileSync(`${publicDir}/${file}`))
    const version = hash.digest('hex').slice(0, 12)
    for (const file of files) {
      const content = readFileSync(`${publicDir}/${file}`)
      const source = file === 'sw.js' ? content.toString('utf8').replaceAll('__SHELL_VERSION__', version) : content
      this.emitFile({ type: 'asset', fileName: file, source })
    }
  },
})

/** examples/flag-console: one minified module for the page plus its static shell, served by `npm start` at /. */
const flagConsole = {
  input: 'examples/flag-console/src/main.ts',
  // One file, so the service worker's shell list stays complete: the sync client's lazy conflict chunk is inlined.
  output: { file: 'examples/flag-console/dist/app.js', format: 'es', sourcemap: true, inlineDynamicImports: true },
  plugins: [browserResolve(), esbuild({ minify: true, target: 'es2022' }), appShell('examples/flag-console/public')],
}

export default [...library('packages/sync-client', 'sync-client'), flagConsole]
