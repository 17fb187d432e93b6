import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

// What npm publishes for each package. The tarballs themselves are checked by `npm run lint:packages`
// (publint, attw, file list); this pins the package.json decisions that no linter knows about.
const root = new URL('../../', import.meta.url)

interface Manifest {
  name: string
  version: string
  private?: boolean
  license?: string
  repository?: { type: string; url: string; directory: string }
  homepage?: string
  bugs?: { url: string }
  keywords?: string[]
  engines?: { node?: string }
  publishConfig?: { access?: string }
  files?: string[]
  dependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
  devDependencies?: Record<string, string>
}

const read = (path: string): Manifest => JSON.parse(readFileSync(new URL(path, root), 'utf8')) as Manifest
const published = readdirSync(new URL('packages/', root))
  .filter((dir) => existsSync(new URL(`packages/${dir}/package.json`, root)))
  .map((dir) => ({ dir, pkg: read(`packages/${dir}/package.json`) }))
  .filter(({ pkg }) => !pkg.private)

describe('published package.json files', () => {
  it('covers the eleven packages', () => {
    expect(published.map(({ pkg }) => pkg.name).sort()).toEqual(
      [
        'evaluation',
        'flag-client',
        'flag-service',
        'flat-api',
        'protocol',
        'react',
        'receiver',
        'server-kit',
        'server-provider',
        'store',
        'sync-client',
      ].map((n) => `@flagsync/${n}`),
    )
  })

  it.each(published)('$dir: license, repository, homepage, bugs, keywords, engines, public access', ({ dir, pkg }) => {
    expect(pkg.license).toBe('MIT')
    expect(readFileSync(new URL(`packages/${dir}/LICENSE`, root), 'utf8')).toBe(
      readFileSync(new URL('LICENSE', root), 'utf8'),
    )
    expect(pkg.repository).toEqual({
      type: 'git',
      url: 'git+https://github.com/flagsync/flagsync.git',
      directory: `packages/${dir}`,
    })
    expect(pkg.homepage).toBe(`https://github.com/flagsync/flagsync/tree/main/packages/${dir}#readme`)
    expect(pkg.bugs).toEqual({ url: 'https://github.com/flagsync/flagsync/issues' })
    expect(pkg.keywords?.length).toBeGreaterThan(2)
    expect(pkg.engines).toEqual({ node: '>=20.19' })
    expect(pkg.publishConfig).toEqual({ access: 'public' })
    expect(pkg.files).toContain('!**/*.tsbuildinfo')
  })

  it.each(published)('$dir: depends on other @flagsync packages through caret ranges', ({ pkg }) => {
    const internal = Object.entries({ ...pkg.dependencies, ...pkg.peerDependencies }).filter(([name]) =>
      name.startsWith('@flagsync/'),
    )
    for (const [name, range] of internal)
      expect(`${name}@${range}`).toBe(`${name}@^${read('packages/protocol/package.json').version}`)
  })

  it('makes @openfeature/web-sdk and dexie peers of the browser packages (one copy in the app)', () => {
    const byDir = Object.fromEntries(published.map(({ dir, pkg }) => [dir, pkg]))
    for (const dir of ['flag-client', 'sync-client', 'react']) {
      expect(byDir[dir]?.peerDependencies?.['@openfeature/web-sdk'], dir).toBeDefined()
      expect(byDir[dir]?.peerDependenciesMeta?.['@openfeature/web-sdk']?.optional, dir).toBeUndefined()
      expect(byDir[dir]?.dependencies?.['@openfeature/web-sdk'], dir).toBeUndefined()
    }
    expect(byDir['sync-client']?.peerDependencies?.dexie).toBeDefined()
    expect(byDir['sync-client']?.dependencies?.dexie).toBeUndefined()
    for (const { pkg } of published) expect(pkg.dependencies?.dexie, pkg.name).toBeUndefined()
  })

  it('makes @openfeature/server-sdk a peer of the server provider, which brings no browser package', () => {
    const provider = read('packages/server-provider/package.json')
    expect(Object.keys(provider.peerDependencies ?? {})).toEqual(['@openfeature/server-sdk'])
    expect(provider.peerDependenciesMeta).toBeUndefined()
    const brought = { ...provider.dependencies, ...provider.peerDependencies, ...provider.optionalDependencies }
    for (const name of ['dexie', '@openfeature/web-sdk', '@flagsync/flag-client', '@flagsync/sync-client'])
      expect(brought[name], name).toBeUndefined()
  })

  it('makes sqlite3 and pg optional peers of the store; the servers bring sqlite3 as an optional dependency', () => {
    const store = read('packages/store/package.json')
    expect(Object.keys(store.peerDependencies ?? {}).sort()).toEqual(['pg', 'sqlite3'])
    expect(store.peerDependenciesMeta).toEqual({ pg: { optional: true }, sqlite3: { optional: true } })
    for (const { pkg } of published) {
      expect(pkg.dependencies?.sqlite3, pkg.name).toBeUndefined()
      expect(pkg.dependencies?.pg, pkg.name).toBeUndefined()
    }
    for (const dir of ['flat-api', 'flag-service', 'receiver']) {
      expect(read(`packages/${dir}/package.json`).optionalDependencies?.sqlite3, dir).toBe(
        store.peerDependencies?.sqlite3,
      )
    }
  })

  it('keeps every peer installed at the root, so tests run against them', () => {
    const rootPkg = read('package.json')
    for (const name of ['@openfeature/web-sdk', '@openfeature/server-sdk', 'dexie', 'pg', 'sqlite3']) {
      expect(rootPkg.devDependencies?.[name], name).toBeDefined()
    }
  })
})
