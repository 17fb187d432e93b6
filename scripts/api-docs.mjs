// API reference of the browser packages, generated from their TSDoc comments with typedoc's model and
// rendered here as one markdown file per package in docs/api/ (typedoc-plugin-markdown is not a dependency).
//   node scripts/api-docs.mjs           regenerate docs/api/
//   node scripts/api-docs.mjs --check   fail when docs/api/ is out of date (npm test)
// The output is deterministic: members sorted by name, no dates, no source links; what a package re-exports from
// another is listed by name and documented once, in its own package's file. The check is fast when nothing
// public changed: docs/api/inputs.sha256 records a hash of the packages' emitted declarations (dist/**/*.d.ts, which
// carry every exported type and doc comment, and which `tsc -b` has just rebuilt in npm test), this script and
// typedoc's version; typedoc (~10 s) runs only when that hash differs, and the check then compares the markdown.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const OUT = join(root, 'docs/api')
const HASH_FILE = 'inputs.sha256'
const PACKAGES = ['protocol', 'evaluation', 'flag-client', 'sync-client', 'react']
const check = process.argv.includes('--check')

const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'))

function walk(dir, keep) {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name), keep) : keep(e.name) ? [join(dir, e.name)] : []))
}

function inputsHash() {
  const hash = createHash('sha256')
  hash.update(readJson(join(root, 'node_modules/typedoc/package.json')).version)
  for (const file of [fileURLToPath(import.meta.url), join(root, 'tsconfig.docs.json')]) hash.update(readFileSync(file))
  for (const pkg of PACKAGES) {
    // bundle/ is rollup's copy of the same declarations.
    const dist = join(root, 'packages', pkg, 'dist')
    for (const file of walk(dist, (n) => n.endsWith('.d.ts')).filter((f) => !f.includes('/bundle/'))) {
      hash.update(relative(root, file)).update(readFileSync(file))
    }
  }
  return `${hash.digest('hex')}\n`
}

// ---- rendering -------------------------------------------------------------------------------------------------

// typedoc (and TypeScript with it) is loaded only when the reference is generated: the check's fast path skips it.
let ReflectionKind
const kindSections = () => [
  [ReflectionKind.Function, 'Functions'],
  [ReflectionKind.Class, 'Classes'],
  [ReflectionKind.Interface, 'Interfaces'],
  [ReflectionKind.TypeAlias, 'Types'],
  [ReflectionKind.Variable, 'Constants'],
  [ReflectionKind.Enum, 'Enums'],
]

function text(parts = []) {
  return parts
    .map((p) => {
      if (p.kind === 'inline-tag') return `\`${(p.text || p.target?.name || '').trim()}\``
      return p.text
    })
    .join('')
    .trim()
}

function typeString(type) {
  if (!type) return 'unknown'
  if (type.type === 'reflection') {
    const decl = type.declaration
    if (decl.signatures?.length) return decl.signatures.map((s) => signatureString(s, '')).join(' & ')
    if (decl.children?.length) {
      return `{ ${decl.children.map((c) => `${c.flags.isReadonly ? 'readonly ' : ''}${c.name}${c.flags.isOptional ? '?' : ''}: ${typeString(c.type)}`).join('; ')} }`
    }
    if (decl.indexSignatures?.length) {
      const s = decl.indexSignatures[0]
      return `{ [${s.parameters?.[0]?.name ?? 'key'}: ${typeString(s.parameters?.[0]?.type)}]: ${typeString(s.type)} }`
    }
    return '{}'
  }
  return type.toString()
}

/** A schema's inferred type runs to kilobytes; its comment says what it accepts, so keep the outer name only. */
function shortType(type) {
  return type.length > 160 && /^[\w.$]+</.test(type) ? `${type.slice(0, type.indexOf('<'))}<…>` : type
}

function signatureString(sig, name) {
  const typeParams = sig.typeParameters?.length ? `<${sig.typeParameters.map((t) => t.name).join(', ')}>` : ''
  const params = (sig.parameters ?? [])
    .map(
      (p) =>
        `${p.flags.isRest ? '...' : ''}${p.name}${p.flags.isOptional || p.defaultValue ? '?' : ''}: ${typeString(p.type)}`,
    )
    .join(', ')
  const arrow = name === '' ? ' => ' : ': '
  return `${name}${typeParams}(${params})${arrow}${typeString(sig.type)}`
}

/** Summary, parameters, returns, throws, remarks and examples of a comment, as markdown lines. */
function commentLines(comment, params = []) {
  const lines = []
  if (comment?.summary?.length) lines.push(text(comment.summary), '')
  const described = params.filter((p) => p.comment?.summary?.length)
  if (described.length) {
    for (const p of described) lines.push(`- \`${p.name}\`: ${text(p.comment.summary).replace(/\n/g, ' ')}`)
    lines.push('')
  }
  for (const tag of comment?.blockTags ?? []) {
    const body = text(tag.content)
    if (tag.tag === '@example') lines.push('Example:', '', body, '')
    else if (tag.tag === '@returns') lines.push(`Returns: ${body}`, '')
    else if (tag.tag === '@throws') lines.push(`Throws: ${body}`, '')
    else if (tag.tag === '@defaultValue' || tag.tag === '@default') lines.push(`Default: ${body}`, '')
    else if (tag.tag === '@deprecated') lines.push(`**Deprecated.** ${body}`, '')
    else if (tag.tag === '@remarks' || tag.tag === '@see') lines.push(body, '')
  }
  return lines
}

function memberLines(member) {
  const lines = []
  const flags = `${member.flags.isStatic ? 'static ' : ''}${member.flags.isReadonly ? 'readonly ' : ''}`
  if (member.signatures?.length) {
    for (const sig of member.signatures) {
      lines.push(`- \`${flags}${signatureString(sig, member.name)}\``)
      const body = commentLines(sig.comment ?? member.comment, sig.parameters)
      lines.push(...indent(body))
    }
  } else if (member.getSignature || member.setSignature) {
    const sig = member.getSignature ?? member.setSignature
    const type = member.getSignature ? member.getSignature.type : member.setSignature.parameters?.[0]?.type
    lines.push(`- \`${member.setSignature ? '' : 'readonly '}${member.name}: ${typeString(type)}\``)
    lines.push(...indent(commentLines(sig.comment ?? member.comment)))
  } else {
    const optional = member.flags.isOptional ? '?' : ''
    lines.push(`- \`${flags}${member.name}${optional}: ${typeString(member.type)}\``)
    lines.push(...indent(commentLines(member.comment)))
  }
  return lines
}

function indent(lines) {
  const out = lines.map((l) => (l === '' ? '' : `  ${l.replace(/\n/g, '\n  ')}`))
  while (out.length && out[out.length - 1] === '') out.pop()
  return out
}

const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

function declarationLines(decl) {
  const lines = [`### ${decl.name}`, '']
  if (decl.kind === ReflectionKind.Function) {
    for (const sig of decl.signatures ?? []) {
      lines.push(
        '```ts',
        `function ${signatureString(sig, decl.name)}`,
        '```',
        '',
        ...commentLines(sig.comment ?? decl.comment, sig.parameters),
      )
    }
    return lines
  }
  if (decl.kind === ReflectionKind.TypeAlias) {
    lines.push('```ts', `type ${decl.name} = ${typeString(decl.type)}`, '```', '', ...commentLines(decl.comment))
    const members = decl.type?.type === 'reflection' ? [] : (decl.children ?? [])
    if (members.length) lines.push(...members.sort(byName).flatMap(memberLines), '')
    return lines
  }
  if (decl.kind === ReflectionKind.Variable) {
    lines.push(
      '```ts',
      `const ${decl.name}: ${shortType(typeString(decl.type))}`,
      '```',
      '',
      ...commentLines(decl.comment),
    )
    return lines
  }
  const heritage = [
    decl.extendedTypes?.length ? ` extends ${decl.extendedTypes.map(typeString).join(', ')}` : '',
    decl.implementedTypes?.length ? ` implements ${decl.implementedTypes.map(typeString).join(', ')}` : '',
  ].join('')
  const keyword =
    decl.kind === ReflectionKind.Class ? 'class' : decl.kind === ReflectionKind.Enum ? 'enum' : 'interface'
  lines.push('```ts', `${keyword} ${decl.name}${heritage}`, '```', '', ...commentLines(decl.comment))
  const members = (decl.children ?? []).filter((m) => !m.flags.isPrivate && !m.flags.isProtected && !m.inheritedFrom)
  const ctor = members.filter((m) => m.kind === ReflectionKind.Constructor)
  const rest = members.filter((m) => m.kind !== ReflectionKind.Constructor).sort(byName)
  if (ctor.length || rest.length) lines.push(...[...ctor, ...rest].flatMap(memberLines), '')
  return lines
}

function ownFile(pkg, decl) {
  const file = decl.sources?.[0]?.fullFileName
  return file === undefined || file.startsWith(join(root, 'packages', pkg, 'src'))
}

function renderPackage(pkg, module) {
  const name = readJson(join(root, 'packages', pkg, 'package.json')).name
  const lines = [
    `# ${name}`,
    '',
    `API reference generated from the TSDoc comments by \`npm run docs:api\`; do not edit. See also the package's [README](../../packages/${pkg}/README.md).`,
    '',
  ]
  // Declarations of another package (re-exported here) are documented in that package's file, not copied.
  const own = (c) => c.kind !== ReflectionKind.Reference && ownFile(pkg, c)
  const children = (module.children ?? []).filter(own)
  const reexports = (module.children ?? [])
    .filter((c) => !own(c))
    .map((c) => c.name)
    .sort()
  for (const [kind, title] of kindSections()) {
    const decls = children.filter((c) => c.kind === kind).sort(byName)
    if (!decls.length) continue
    lines.push(`## ${title}`, '')
    for (const decl of decls) lines.push(...declarationLines(decl))
  }
  if (reexports.length) {
    lines.push(
      '## Re-exports',
      '',
      'Documented with the package they come from:',
      '',
      reexports.map((n) => `\`${n}\``).join(', '),
      '',
    )
  }
  return `${lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`
}

async function generate() {
  const typedoc = await import('typedoc')
  ReflectionKind = typedoc.ReflectionKind
  const { Application } = typedoc
  const app = await Application.bootstrap({
    entryPoints: PACKAGES.map((p) => join(root, 'packages', p, 'src/index.ts')),
    tsconfig: join(root, 'tsconfig.docs.json'),
    skipErrorChecking: true,
    excludePrivate: true,
    excludeProtected: true,
    excludeInternal: true,
    disableSources: false, // read by ownFile, never rendered
    readme: 'none',
    logLevel: 'Error',
  })
  const project = await app.convert()
  if (!project) throw new Error('typedoc could not convert the packages')
  const files = new Map()
  const index = [
    '# API reference',
    '',
    'Generated by `npm run docs:api` from the TSDoc comments of the browser packages; do not edit.',
    '',
  ]
  for (const pkg of PACKAGES) {
    const module = (project.children ?? []).find((m) => m.name === `${pkg}/src`)
    if (!module) throw new Error(`typedoc found no module for packages/${pkg}`)
    files.set(`${pkg}.md`, renderPackage(pkg, module))
    index.push(`- [${readJson(join(root, 'packages', pkg, 'package.json')).name}](${pkg}.md)`)
  }
  files.set('README.md', `${index.join('\n')}\n`)
  return files
}

const hash = inputsHash()
const stored = existsSync(join(OUT, HASH_FILE)) ? readFileSync(join(OUT, HASH_FILE), 'utf8') : ''
if (check && stored === hash) {
  console.log('docs/api is up to date (declarations unchanged)')
  process.exit(0)
}
const files = await generate()
if (check) {
  const present = existsSync(OUT) ? readdirSync(OUT).filter((f) => f.endsWith('.md')) : []
  const stale = [...files].filter(
    ([f, content]) => !existsSync(join(OUT, f)) || readFileSync(join(OUT, f), 'utf8') !== content,
  )
  const extra = present.filter((f) => !files.has(f))
  if (stale.length || extra.length) {
    console.error(`docs/api is out of date (${[...stale.map(([f]) => f), ...extra].join(', ')}): run npm run docs:api`)
    process.exit(1)
  }
  console.log(
    `docs/api is up to date (declarations changed, reference did not; npm run docs:api refreshes ${HASH_FILE})`,
  )
} else {
  rmSync(OUT, { recursive: true, force: true })
  mkdirSync(OUT, { recursive: true })
  for (const [file, content] of files) writeFileSync(join(OUT, file), content)
  writeFileSync(join(OUT, HASH_FILE), hash)
  console.log(`docs/api: ${[...files.keys()].join(', ')}`)
}
