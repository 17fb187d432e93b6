/**
 * `@flagsync/server-provider` as a Node backend installs it: the tarballs `npm pack` makes of it and of the
 * `@flagsync` packages it requires, next to @openfeature/server-sdk and the third-party packages they require. No
 * browser peer comes along, and the README's sample runs as written against a real flat API.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { closure, installPacked, root, run } from '@flagsync/test-support/packed-app'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

const app = tempDir('flagsync-server-provider-install-')
const installed = closure('@flagsync/server-provider', '@openfeature/server-sdk')
/** The app's own development dependency: Node's types. */
const appTypes = closure('@types/node').linked
const servers: TestServer[] = []

beforeAll(async () => {
  // The tarballs carry dist/: build it (a no-op when current).
  await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-b', 'packages/server-provider'], {
    cwd: root,
  })
  await installPacked(app.path, installed.packed, [...installed.linked, ...appTypes])
}, 120_000)
afterEach(async () => {
  for (const s of servers.splice(0)) await s.dispose()
})
afterAll(() => app.remove())

/** The first ```js block of the package README. */
function readmeSample(): string {
  const readme = readFileSync(join(root, 'packages/server-provider/README.md'), 'utf8')
  const sample = /```js\n([\s\S]*?)```/.exec(readme)?.[1]
  if (!sample) throw new Error('no js sample in the README')
  return sample
}

describe('@flagsync/server-provider installed in a Node app', () => {
  it('brings neither dexie nor @openfeature/web-sdk nor the flag client', () => {
    expect(installed.packed).toEqual(['@flagsync/evaluation', '@flagsync/protocol', '@flagsync/server-provider'])
    expect(installed.linked).toEqual(expect.arrayContaining(['@openfeature/server-sdk', 'eventsource-parser']))
    for (const name of ['dexie', '@openfeature/web-sdk', '@flagsync/flag-client', '@flagsync/sync-client']) {
      expect(installed.linked, name).not.toContain(name)
      expect(existsSync(join(app.path, 'node_modules', name)), name).toBe(false)
    }
  })

  it('runs the README sample as written against a flat API with SDK_KEY', async () => {
    const server = await startTestServer({ sdkKey: 'sk_backend' })
    servers.push(server)
    const put = await server.request('/api/flags', {
      method: 'POST',
      body: {
        key: 'new-checkout',
        is_enabled: true,
        rollout_percentage: 0,
        rules: [{ attribute: 'country', operator: 'equals', values: ['NL'] }],
      },
    })
    expect(put.status).toBe(200)
    writeFileSync(join(app.path, 'sample.mjs'), readmeSample())
    const { stdout } = await run(process.execPath, ['sample.mjs'], {
      cwd: app.path,
      timeout: 15_000,
      env: { ...process.env, FLAGSYNC_STREAM_URL: `${server.url}/stream`, FLAGSYNC_SDK_KEY: 'sk_backend' },
    })
    expect(stdout).toContain('new-checkout: true')
    expect(stdout).toContain("reason: 'TARGETING_MATCH'")
  })
  it('type-checks a Node app against its declarations with skipLibCheck off', async () => {
    writeFileSync(
      join(app.path, 'app.ts'),
      `import {
  FlagsyncServerProvider,
  type FlagsyncServerProviderOptions,
  type ServerImpressionOptions,
  type ServerImpressionStatus,
} from '@flagsync/server-provider'
import { OpenFeature } from '@openfeature/server-sdk'

const impressions: ServerImpressionOptions = { maxBatch: 100, onWarning: (message: string) => console.warn(message) }
const options: FlagsyncServerProviderOptions = { streamUrl: 'http://127.0.0.1:8787/stream', sdkKey: 'sk', fetch, impressions }
const provider = new FlagsyncServerProvider(options)
await OpenFeature.setProviderAndWait(provider)
export const on: boolean = await OpenFeature.getClient().getBooleanValue('new-checkout', false)
export const status: ServerImpressionStatus = provider.impressionStatus()
`,
    )
    writeFileSync(
      join(app.path, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          lib: ['es2022'],
          types: ['node'],
        },
        files: ['app.ts'],
      }),
    )
    const tsc = join(root, 'node_modules/typescript/bin/tsc')
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: app.path }).catch(
      (error: { stdout: string }) => ({ stdout: error.stdout }),
    )
    expect(result.stdout).toBe('')
  }, 120_000)
})
