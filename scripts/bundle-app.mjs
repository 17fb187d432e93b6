// What an app pays: a small Vite app per row, built the way the packages' READMEs use them, in a temp folder whose
// node_modules is a link to the repository's (so the workspace packages and their peers resolve as in an install).
// The packages come from src/ (the `flagsync-source` condition), so no build is needed first. React and React DOM are
// left external: a React app has them already. Measured by scripts/bundle-size.mjs (`bundle.app_*` in the bench).
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build } from 'vite'

/** The apps: `main` is the page's module, written as the package README writes it. */
export const APPS = [
  {
    id: 'bundle.app_sync',
    own: 'bundle.sync_client',
    what: 'sync client: `createSyncClient` with Dexie (its peer)',
    file: 'main.ts',
    main: `import { createSyncClient } from '@flagsync/sync-client'
const sync = createSyncClient({ webhookUrl: 'https://flags.example.com/sync' })
await sync.insert('flags', { key: 'new-checkout', is_enabled: true, rollout_percentage: 10 })
sync.start()
`,
  },
  {
    id: 'bundle.app_flag',
    own: 'bundle.flag_client',
    what: 'flag client alone: `createFlagClient` + `FlagsyncProvider` with `@openfeature/web-sdk` (its peer)',
    file: 'main.ts',
    main: `import { createFlagClient, FlagsyncProvider } from '@flagsync/flag-client'
import { OpenFeature } from '@openfeature/web-sdk'
const flags = createFlagClient({ streamUrl: 'https://flags.example.com/stream' })
await OpenFeature.setProviderAndWait(new FlagsyncProvider(flags))
document.body.textContent = String(OpenFeature.getClient().getBooleanValue('new-checkout', false))
`,
  },
  {
    id: 'bundle.app_react',
    own: null,
    what: 'React hooks: `@flagsync/react` + both clients as its README sets them up, Dexie and OpenFeature included',
    file: 'main.tsx',
    main: `import { FlagsyncProvider, useFlag, useFlagClient, usePendingChanges, useSyncStatus } from '@flagsync/react'
import { createFlagClient, createSyncClient } from '@flagsync/sync-client'
import { createRoot } from 'react-dom/client'
const sync = createSyncClient({ webhookUrl: 'https://flags.example.com/sync' })
const flags = createFlagClient({ streamUrl: 'https://flags.example.com/stream', syncClient: sync })
sync.start()
function Checkout() {
  const onePage = useFlag('new-checkout', false, { user_id: 'u-42' })
  const client = useFlagClient()
  const pending = usePendingChanges('flags')
  const status = useSyncStatus()
  return (
    <button onClick={() => client?.updateFlag('new-checkout', { is_enabled: !onePage })}>
      {String(onePage)} {pending.length} {status?.state}
    </button>
  )
}
createRoot(document.body).render(
  <FlagsyncProvider client={flags} syncClient={sync}>
    <Checkout />
  </FlagsyncProvider>,
)
`,
  },
]

const REACT = ['react', 'react-dom', 'react-dom/client', 'react/jsx-runtime']

/**
 * Builds one app (production, minified, Vite's defaults) and returns its JS chunks.
 * @param {string} root the repository root (its node_modules is linked into the app's folder)
 * @param {typeof APPS[number]} app
 * @returns {Promise<{ name: string, code: string, imports: string[], entry: boolean }[]>}
 */
export async function buildApp(root, app) {
  const dir = mkdtempSync(join(tmpdir(), 'flagsync-app-'))
  try {
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir')
    writeFileSync(
      join(dir, 'index.html'),
      `<!doctype html><html><body><script type="module" src="./${app.file}"></script></body></html>\n`,
    )
    writeFileSync(join(dir, app.file), app.main)
    const result = await build({
      root: dir,
      configFile: false,
      logLevel: 'silent',
      resolve: { conditions: ['flagsync-source'] },
      build: { write: false, target: 'es2022', rollupOptions: { external: REACT } },
    })
    const outputs = (Array.isArray(result) ? result : [result]).flatMap((r) => ('output' in r ? r.output : []))
    return outputs
      .filter((o) => o.type === 'chunk')
      .map((c) => ({ name: c.fileName, code: c.code, imports: c.imports, entry: c.isEntry }))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
