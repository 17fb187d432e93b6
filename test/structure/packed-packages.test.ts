/**
 * What `npm pack` makes of the browser packages.
 *
 * `@flagsync/react` as an app installs it: the tarballs `npm pack` makes of it
 * and of every `@flagsync` package it requires, unpacked into a temp app's
 * node_modules next to the third-party packages they require (linked from the
 * repo's node_modules). The sync client is an optional peer: without it (and
 * without its `dexie` peer) the bindings load in Node and an app type-checks
 * against their declarations with `skipLibCheck: false`.
 *
 * Needs built dist/ folders (`npm run build`), as `npm run lint:packages` does.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { closure, installPacked, readManifest, root, run } from '@flagsync/test-support/packed-app'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const app = tempDir('flagsync-react-install-')
const installed = closure('@flagsync/react')
/** The app's own development dependency: React's types. */
const appTypes = closure('@types/react').linked

beforeAll(async () => {
  await installPacked(app.path, installed.packed, [...installed.linked, ...appTypes])
}, 120_000)

afterAll(() => app.remove())

describe('@flagsync/react installed without @flagsync/sync-client', () => {
  it('requires neither the sync client nor dexie: the sync client is an optional peer', () => {
    expect(installed.packed).toEqual([
      '@flagsync/evaluation',
      '@flagsync/flag-client',
      '@flagsync/protocol',
      '@flagsync/react',
    ])
    expect(installed.linked).not.toContain('dexie')
    const react = readManifest(join(root, 'packages/react'))
    expect(react.peerDependenciesMeta?.['@flagsync/sync-client']).toEqual({ optional: true })
    expect(existsSync(join(app.path, 'node_modules/@flagsync/sync-client'))).toBe(false)
  })

  it('ships declarations that name no sync client module', () => {
    const dist = join(app.path, 'node_modules/@flagsync/react/dist')
    const declarations = readdirSync(dist).filter((file) => file.endsWith('.d.ts'))
    expect(declarations).toContain('index.d.ts')
    for (const file of declarations)
      expect(readFileSync(join(dist, file), 'utf8'), file).not.toMatch(/["']@flagsync\/sync-client["']/)
  })

  it('loads in Node: the provider and hooks are there', async () => {
    writeFileSync(
      join(app.path, 'load.mjs'),
      `import * as bindings from '@flagsync/react'
console.log(JSON.stringify(Object.keys(bindings).sort()))`,
    )
    const { stdout } = await run(process.execPath, ['load.mjs'], { cwd: app.path })
    expect(JSON.parse(stdout)).toEqual(
      expect.arrayContaining(['FlagsyncProvider', 'useFlag', 'useFlags', 'useSyncStatus', 'usePendingChanges']),
    )
  })

  it('type-checks an app against its declarations with skipLibCheck off', async () => {
    writeFileSync(
      join(app.path, 'app.ts'),
      `import { createElement } from 'react'
import { FlagsyncProvider, useFlag, useSyncStatus, type SyncStatus } from '@flagsync/react'

export function Checkout(): string {
  const onePage: boolean = useFlag('new-checkout', false)
  const sync: SyncStatus | null = useSyncStatus()
  return \`\${onePage} \${sync?.state ?? 'none'}\`
}
export const page = createElement(FlagsyncProvider, { url: 'https://flags.example.com/stream', bootstrap: [] })
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
          lib: ['es2022', 'dom'],
          types: [],
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

describe('the @flagsync/sync-client tarball', () => {
  it('ships what its exports map offers, not the repository’s single-file builds in dist/bundle', async () => {
    const { stdout } = await run(
      'npm',
      ['pack', '--dry-run', '--json', '--ignore-scripts', '-w', 'packages/sync-client'],
      {
        cwd: root,
        maxBuffer: 64 * 1024 * 1024,
      },
    )
    const [pack] = JSON.parse(stdout) as Array<{ files: Array<{ path: string }>; unpackedSize: number }>
    const paths = pack?.files.map((f) => f.path) ?? []
    expect(paths).toContain('dist/index.js')
    expect(paths).toContain('dist/index.d.ts')
    expect(paths.filter((path) => path.startsWith('dist/bundle/'))).toEqual([])
    // The per-file build, its sources and maps: well under the 1.5 MB the single-file builds and their maps add.
    expect(pack?.unpackedSize).toBeLessThan(1_000_000)
  })
})
