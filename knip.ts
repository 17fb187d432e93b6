import type { KnipConfig } from 'knip'

// Unused files, exports and dependencies (`npm run lint:unused`, part of `npm test`). Each workspace's package.json
// exports and bin give its library entry points; the tests, scripts, benchmarks and examples are added here.
// The server packages' indexes are checked too (includeEntryExports): what no package, example, test or CLI
// imports is not exported. The browser packages' indexes are their documented API (docs/api/) and are not.
const tests = ['test/**/*.test.{ts,tsx}']
const sources = ['src/**/*.{ts,tsx}', 'test/**/*.{ts,tsx}']

const servers = ['flag-service', 'flat-api', 'receiver', 'server-kit', 'store']
const server = {
  entry: tests,
  project: sources,
  includeEntryExports: true,
  // The option and result types of the exported functions stay exported, so callers can name them.
  ignoreIssues: { 'src/index.ts': ['types' as const] },
}

const config: KnipConfig = {
  // A type exported next to the function that takes or returns it is part of that function's signature: callers
  // name it through the package index even when no file here does.
  ignoreExportsUsedInFile: { interface: true, type: true },
  workspaces: {
    '.': {
      entry: [
        'scripts/*.mjs',
        'bench/*.mjs',
        // Preloaded with node --import by bench/lib/proc.mjs.
        'bench/lib/gc-on-signal.mjs',
        'bench/{servers,variants}/*.mjs',
        // Loaded by bench/browser/*.html pages that bench/browser.mjs serves.
        'bench/browser/*.{js,mjs}',
      ],
      project: ['scripts/**/*.mjs', 'bench/**/*.{js,mjs}', '*.{ts,mjs}'],
      // Installed with util-linux; bench/impressions.mjs drops privileges with it when run as root.
      ignoreBinaries: ['runuser'],
      // bench/browser.mjs copies the sync client bundle and the workloads next to the page before loading it.
      ignoreUnresolved: ['./sync-client.browser.min.js', './workloads.js'],
      // The e2e pages bundle the OFREP web provider from a source string (test/e2e/ofrep-web.e2e.ts), and
      // test/e2e/axe.ts reads axe-core's script file to inject it: neither is an import.
      ignoreDependencies: ['@openfeature/ofrep-web-provider', 'axe-core'],
    },
    'packages/*': { entry: tests, project: sources },
    ...Object.fromEntries(servers.map((name) => [`packages/${name}`, server])),
    'packages/protocol': {
      entry: tests,
      project: sources,
      // The blocks scripts/browser-parsers.mjs compiles schemas into: the generated file imports the ones today's
      // schemas need, the others (any, never, record, lazy) are there for the schema kinds it also supports.
      ignoreIssues: { 'src/parse-kit.ts': ['exports' as const] },
    },
    'packages/flag-client': {
      entry: tests,
      project: sources,
      // DexieImpressionQueue is the documented earlier name of IndexedDbImpressionQueue (README, docs/api).
      ignoreIssues: { 'src/impressions/indexeddb-queue.ts': ['duplicates' as const] },
    },
    'packages/server-provider': { project: ['src/**/*.ts'] },
    'packages/store': {
      ...server,
      // The optional database drivers: the store loads the one DATABASE_URL names and says which to install when it
      // is missing (test/server/driver-missing.test.ts).
      ignoreDependencies: ['pg', 'sqlite3'],
    },
    'examples/*': { entry: ['src/main.{ts,tsx}'], project: ['src/**/*.{ts,tsx}'] },
    'examples/flag-console': { entry: ['src/main.ts', ...tests], project: sources },
    test: {
      entry: ['**/*.test.ts', 'e2e/*.e2e.ts'],
      project: ['**/*.ts', '!support/**'],
    },
    'test/support': {
      // hide-modules.cjs is preloaded with node --require by test/server/driver-missing.test.ts.
      entry: ['hide-modules.cjs'],
      project: ['*.{ts,cjs}'],
    },
  },
}

export default config
