import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

export const run = promisify(execFile)
export const root = fileURLToPath(new URL('../../', import.meta.url))

export interface Manifest {
  name: string
  dependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
}
export const readManifest = (dir: string): Manifest =>
  JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest

/** Dependencies and required peers: what an install of the package brings (npm 7+ installs required peers). */
const required = (pkg: Manifest): string[] => [
  ...Object.keys(pkg.dependencies ?? {}),
  ...Object.keys(pkg.peerDependencies ?? {}).filter((name) => !pkg.peerDependenciesMeta?.[name]?.optional),
]

/** Workspace package name → its folder under the repository root. */
const workspaces = new Map(
  readdirSync(join(root, 'packages'))
    .filter((dir) => existsSync(join(root, 'packages', dir, 'package.json')))
    .map((dir) => [readManifest(join(root, 'packages', dir)).name, `packages/${dir}`]),
)

/** Every package an install of `names` brings: workspaces (to pack) and third-party packages (to link). */
export function closure(...names: string[]): { packed: string[]; linked: string[] } {
  const packed = new Set<string>()
  const linked = new Set<string>()
  const visit = (dep: string) => {
    if (packed.has(dep) || linked.has(dep)) return
    const workspace = workspaces.get(dep)
    ;(workspace ? packed : linked).add(dep)
    for (const next of required(readManifest(join(root, workspace ?? `node_modules/${dep}`)))) visit(next)
  }
  for (const name of names) visit(name)
  return { packed: [...packed].sort(), linked: [...linked].sort() }
}

/**
 * Makes `appDir` an ESM app with `packed` installed from the tarballs `npm pack` makes of them (unpacked into its
 * node_modules) and `linked` linked from the repository's node_modules. Needs built dist/ folders.
 */
export async function installPacked(appDir: string, packed: readonly string[], linked: readonly string[]) {
  const modules = join(appDir, 'node_modules')
  const packs = join(appDir, 'packs')
  mkdirSync(packs, { recursive: true })
  const { stdout } = await run(
    'npm',
    [
      'pack',
      '--json',
      '--ignore-scripts',
      '--pack-destination',
      packs,
      ...packed.flatMap((name) => ['-w', workspaces.get(name) as string]),
    ],
    { cwd: root, maxBuffer: 64 * 1024 * 1024 },
  )
  for (const pack of JSON.parse(stdout) as Array<{ name: string; filename: string }>) {
    const into = join(modules, pack.name)
    mkdirSync(into, { recursive: true })
    await run('tar', ['-xzf', join(packs, pack.filename), '-C', into, '--strip-components=1'])
  }
  for (const name of linked) {
    mkdirSync(dirname(join(modules, name)), { recursive: true })
    symlinkSync(join(root, 'node_modules', name), join(modules, name), 'dir')
  }
  writeFileSync(join(appDir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }))
}
