import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

// No import circles inside a package. A static scan, not the compiler's view: every `import … from`,
// `export … from`, bare `import '…'` and `import('…')` of a relative path counts, type-only ones included, since
// a circle of types still ties the files' layers together.

const root = fileURLToPath(new URL('../..', import.meta.url))

const SPECIFIER =
  /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.(ts|tsx|mts)$/.test(name) && !name.endsWith('.d.ts') ? [path] : []
  })
}

/** The file a relative specifier names: `./x.js` is `x.ts` or `x.tsx`, a folder its `index.ts`. */
function resolveSpecifier(from: string, specifier: string, files: Set<string>): string | undefined {
  const base = resolve(dirname(from), specifier)
  const stem = base.replace(/\.(m?js|jsx|ts|tsx)$/, '')
  for (const candidate of [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, join(base, 'index.ts')]) {
    if (files.has(candidate)) return candidate
  }
  return undefined
}

/** Every source file of `srcDir` with the files of the same tree it imports. */
export function importGraph(srcDir: string): Map<string, string[]> {
  const files = sourceFiles(srcDir)
  const known = new Set(files)
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\/|(?<![:'"`])\/\/.*$/gm, '')
    const targets = new Set<string>()
    for (const match of text.matchAll(SPECIFIER)) {
      const target = resolveSpecifier(file, (match[1] ?? match[2]) as string, known)
      if (target !== undefined) targets.add(target)
    }
    graph.set(file, [...targets].sort())
  }
  return graph
}

/** One circle per strongly connected component of more than one file (or a file importing itself), as a path. */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const components: string[][] = []
  let next = 0
  const connect = (node: string) => {
    index.set(node, next)
    low.set(node, next++)
    stack.push(node)
    onStack.add(node)
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        connect(to)
        low.set(node, Math.min(low.get(node) as number, low.get(to) as number))
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node) as number, index.get(to) as number))
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = []
      let member: string
      do {
        member = stack.pop() as string
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) components.push(component)
    }
  }
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) connect(node)
  return components.map((component) => circleThrough(graph, new Set(component)))
}

/** A shortest circle from the component's first file (by name) back to itself, inside the component. */
function circleThrough(graph: Map<string, string[]>, component: Set<string>): string[] {
  const start = [...component].sort()[0] as string
  const previous = new Map<string, string>()
  const queue = [start]
  while (queue.length > 0) {
    const node = queue.shift() as string
    for (const to of graph.get(node) ?? []) {
      if (!component.has(to)) continue
      if (to === start) {
        const path = [node]
        while (path[0] !== start) path.unshift(previous.get(path[0] as string) as string)
        return [...path, start]
      }
      if (!previous.has(to)) {
        previous.set(to, node)
        queue.push(to)
      }
    }
  }
  return [start, start]
}

function describeCycles(srcDir: string): string[] {
  return findCycles(importGraph(srcDir)).map((cycle) => cycle.map((file) => relative(root, file)).join(' -> '))
}

const packages = readdirSync(join(root, 'packages')).filter((name) => {
  try {
    return statSync(join(root, 'packages', name, 'src')).isDirectory()
  } catch {
    return false
  }
})

describe('no import circles inside a package', () => {
  it('finds the packages and their imports', () => {
    expect(packages).toEqual(expect.arrayContaining(['flag-service', 'sync-client', 'evaluation', 'protocol']))
    const service = importGraph(join(root, 'packages', 'flag-service', 'src'))
    // The scan sees real edges (so an empty graph cannot pass).
    expect(service.get(join(root, 'packages/flag-service/src/app.ts'))).toContain(
      join(root, 'packages/flag-service/src/service-runtime.ts'),
    )
  })

  it.each(packages)('packages/%s/src is acyclic', (name) => {
    expect(describeCycles(join(root, 'packages', name, 'src')), 'import circles').toEqual([])
  })
})

describe('the circle finder', () => {
  const dir = mkdtempSync(join(tmpdir(), 'import-cycles-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), text)
  }

  it('names every circle, through type-only imports, re-exports, folders and dynamic imports', () => {
    write('a.ts', "import { b } from './b.js'\nexport const a = b\n")
    write('b.ts', "import type { C } from './c.js'\nexport const b: C = 1\n")
    write('c.ts', "export { a } from './a.js'\nexport type C = number\n")
    write('leaf.ts', 'export const leaf = 1\n')
    write('uses-leaf.ts', "import { leaf } from './leaf.js'\nexport const x = leaf\n")
    write('feature/index.ts', "export const f = () => import('../top.js')\n")
    write('top.ts', "import { f } from './feature/index.js'\nexport const t = f\n")
    write('self.ts', "// import { nothing } from './leaf.js'\nimport './self.js'\n")
    const cycles = findCycles(importGraph(dir)).map((cycle) => cycle.map((file) => relative(dir, file)).join(' -> '))
    expect(cycles.sort()).toEqual([
      'a.ts -> b.ts -> c.ts -> a.ts',
      'feature/index.ts -> top.ts -> feature/index.ts',
      'self.ts -> self.ts',
    ])
  })

  it('ignores commented-out imports and imports of other packages', () => {
    write(
      'x/one.ts',
      "import { two } from '@flagsync/two'\n/* import { three } from './three.js' */\nexport const one = two\n",
    )
    write('x/three.ts', "import { one } from './one.js'\nexport const three = one\n")
    expect(findCycles(importGraph(join(dir, 'x')))).toEqual([])
  })
})
