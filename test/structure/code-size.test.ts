import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

// Code the next engineer can read: every source file of packages/*/src and examples/*/src is at most
// MAX_FILE_LINES lines, and every function (declaration, arrow, function expression, method, accessor, constructor)
// at most MAX_FUNCTION_LINES, unless the line just above it says why it is longer: `// long: <the reason>`.
// The compiler's parse, not a regex: a function's lines run from its first token (after its doc comment) to its
// closing brace.

const root = fileURLToPath(new URL('../..', import.meta.url))
const MAX_FILE_LINES = 500
const MAX_FUNCTION_LINES = 100
const LONG_REASON = /^\/\/ long: \S/

/**
 * Files and functions over the limits that are being split and carry no `// long:` reason. The test fails when a
 * long file or function is missing here, and when an entry here is no longer long (or no longer exists): remove the
 * entry with the split that makes it short.
 */
const PENDING: readonly { file: string; fn?: string }[] = []

/** A file or function over its limit: `fn` is absent for a whole file. */
interface Oversize {
  file: string
  fn?: string
  lines: number
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : []
  })
}

/** Every `packages/*\/src` and `examples/*\/src` source file, relative to the repository root. */
function checkedFiles(): string[] {
  return ['packages', 'examples'].flatMap((area) =>
    readdirSync(join(root, area))
      .map((name) => join(root, area, name, 'src'))
      .filter((src) => statSync(src, { throwIfNoEntry: false })?.isDirectory())
      .flatMap(sourceFiles)
      .map((path) => relative(root, path)),
  )
}

/** What a reader would call the function: its own name, or the variable or property it is assigned to. */
function functionName(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): string {
  if (node.name) return node.name.getText(source)
  if (ts.isConstructorDeclaration(node)) return 'constructor'
  const parent = node.parent
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name) {
    return parent.name.getText(source)
  }
  return '(anonymous)'
}

/** The file if it is over MAX_FILE_LINES, and its functions over MAX_FUNCTION_LINES without a `// long:` reason. */
export function oversized(file: string, text: string): Oversize[] {
  const lines = text.split('\n')
  const found: Oversize[] = []
  const fileLines = text.endsWith('\n') ? lines.length - 1 : lines.length
  if (fileLines > MAX_FILE_LINES) found.push({ file, lines: fileLines })
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind)
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line
      const reasoned = LONG_REASON.test((lines[first - 1] ?? '').trim())
      if (last - first + 1 > MAX_FUNCTION_LINES && !reasoned) {
        found.push({ file, fn: functionName(node as ts.FunctionLikeDeclaration, source), lines: last - first + 1 })
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

const describeEntry = (e: { file: string; fn?: string }) => (e.fn ? `${e.file}: ${e.fn}` : e.file)
const isPending = (o: Oversize) => PENDING.some((p) => p.file === o.file && p.fn === o.fn)

describe('code size', () => {
  const found = checkedFiles().flatMap((file) => oversized(file, readFileSync(join(root, file), 'utf8')))

  it(`no source file is over ${MAX_FILE_LINES} lines`, () => {
    const files = found.filter((o) => o.fn === undefined && !isPending(o))
    expect(files.map((o) => `${describeEntry(o)} (${o.lines} lines)`)).toEqual([])
  })

  it(`no function is over ${MAX_FUNCTION_LINES} lines without a \`// long:\` reason above it`, () => {
    const functions = found.filter((o) => o.fn !== undefined && !isPending(o))
    expect(functions.map((o) => `${describeEntry(o)} (${o.lines} lines)`)).toEqual([])
  })

  it('every PENDING entry is still over its limit (remove it once split)', () => {
    const stale = PENDING.filter((p) => !found.some((o) => o.file === p.file && o.fn === p.fn))
    expect(stale.map(describeEntry)).toEqual([])
  })

  it('measures a function from its first token to its closing brace, and honours a `// long:` reason', () => {
    const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i}`).join('\n')
    const fn = (name: string, n: number, above = '') =>
      `/** Doc. */\n${above}export function ${name}() {\n${body(n)}\n}\n`
    const arrow = (name: string, n: number) => `const ${name} = () => {\n${body(n)}\n}\n`
    const method = (n: number) => `class C {\n  m() {\n${body(n)}\n  }\n}\n`
    const text = [
      fn('fits', 100),
      fn('tooLong', 101),
      fn('reasoned', 150, '// long: one table of cases, read top to bottom\n'),
      fn('noReason', 101, '// long:\n'),
      arrow('longArrow', 101),
      method(101),
    ].join('\n')
    const functions = oversized('x.ts', text).filter((o) => o.fn !== undefined)
    expect(functions.map((o) => `${o.fn} ${o.lines}`)).toEqual([
      'tooLong 101',
      'noReason 101',
      'longArrow 101',
      'm 101',
    ])
    expect(oversized('x.ts', '\n'.repeat(MAX_FILE_LINES))).toEqual([])
    expect(oversized('x.ts', '\n'.repeat(MAX_FILE_LINES + 1))).toEqual([{ file: 'x.ts', lines: 501 }])
  })
})
