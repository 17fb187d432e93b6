// Browser parsers (issue 17): compiles the zod/mini schemas the flag client parses into plain functions, so the
// browser checks wire data against the servers' own schema definitions without carrying zod (whose smallest
// object schema is ~4.4 kB gz on its own). Each parser answers what `schema.safeParse` answers on JSON data
// (the parsed value, defaults filled and unknown keys stripped or refused as the schema says) or undefined
// where it fails; reasons are left out, the browser never shows them.
//   node scripts/browser-parsers.mjs           prints the generated module
//   node scripts/browser-parsers.mjs --write   rewrites packages/protocol/src/browser-parsers.ts
//   node scripts/browser-parsers.mjs --check   fails when that file is not what the schemas generate
// packages/protocol/test/browser-parsers.test.ts checks the file against the schemas too (npm test), and that every
// parser agrees with zod on generated inputs.
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
export const OUTPUT = join(root, 'packages/protocol/src/browser-parsers.ts')

/** What the browser parses: the exported function, the schema it is compiled from, and the module defining it. */
export const TARGETS = [
  { name: 'parseConnectedData', schema: 'connectedDataSchema', from: './stream.js', what: 'a `connected` event' },
  { name: 'parseStreamUpdate', schema: 'streamUpdateSchema', from: './stream.js', what: 'an `update` event' },
  { name: 'parseSnapshot', schema: 'snapshotSchema', from: './stream.js', what: 'a snapshot body' },
  { name: 'parseFlagPatch', schema: 'flagPatchSchema', from: './flag.js', what: 'a flat merge patch' },
  { name: 'parseFlag', schema: 'flagSchema', from: './flag.js', what: 'a flat flag' },
]

/**
 * The module text for `schemas` (the protocol package's exports). Throws on any schema feature it does not
 * compile, so a browser schema never silently checks less than its zod definition.
 * @param {Record<string, any>} schemas
 */
export function generateBrowserParsers(schemas) {
  /** @type {Map<unknown, string>} */
  const names = new Map()
  /** @type {string[]} */
  const functions = []
  const helpers = { isObject: false, isPlainObject: false }

  /** @type {Map<string, string>} */
  const bodies = new Map()
  let count = 0
  /**
   * The name of the function parsing `schema`, compiled on first use. Schemas that compile to the same body
   * share one function (zod builds a new `z.string()` for every use); a z.lazy is named before its inner
   * schema compiles, so recursion ends there.
   */
  const fn = (/** @type {any} */ schema) => {
    const known = names.get(schema)
    if (known) return known
    const reserved = schema._zod.def.type === 'lazy' ? `p${count++}` : undefined
    if (reserved) names.set(schema, reserved)
    const body = compile(schema, reserved ?? 'schema')
    const name = reserved ?? bodies.get(body) ?? `p${count++}`
    names.set(schema, name)
    if (!bodies.has(body) || reserved) {
      bodies.set(body, name)
      functions.push(`function ${name}(v: unknown): unknown {\n${body}\n}`)
    }
    return name
  }

  /** One statement block returning the parsed value or F. */
  const compile = (/** @type {any} */ schema, /** @type {string} */ self) => {
    const def = schema._zod.def
    const checks = def.checks ?? []
    switch (def.type) {
      case 'string':
        return `  return typeof v === 'string'${checks.map((c) => ` && ${stringCheck(c._zod.def)}`).join('')} ? v : F`
      case 'number':
        return `  return typeof v === 'number' && Number.isFinite(v)${checks.map((c) => ` && ${numberCheck(c._zod.def)}`).join('')} ? v : F`
      case 'boolean':
        return noChecks(def, `  return typeof v === 'boolean' ? v : F`)
      case 'null':
        return noChecks(def, '  return v === null ? v : F')
      case 'unknown':
        return noChecks(def, '  return v')
      case 'never':
        return noChecks(def, '  return F')
      case 'literal':
        return noChecks(def, `  return ${def.values.map((l) => `v === ${literal(l)}`).join(' || ')} ? v : F`)
      case 'enum':
        return noChecks(
          def,
          `  return [${Object.values(def.entries).map(literal).join(', ')}].includes(v as never) ? v : F`,
        )
      case 'nullable':
        return noChecks(def, `  return v === null ? v : ${fn(def.innerType)}(v)`)
      case 'optional':
        if (def.innerType._zod.optin !== undefined)
          throw new Error(`${self}: optional of an optional or defaulted schema`)
        return noChecks(def, `  return v === undefined ? v : ${fn(def.innerType)}(v)`)
      case 'default': {
        const inner = fn(def.innerType)
        const fallback = literal(def.defaultValue)
        return noChecks(
          def,
          `  if (v === undefined) return ${fallback}\n  const r = ${inner}(v)\n  return r === undefined ? ${fallback} : r`,
        )
      }
      case 'lazy':
        return noChecks(def, `  return ${fn(def.getter())}(v)`)
      case 'pipe': {
        const first = `  const r = ${fn(def.in)}(v)\n  if (r === F) return F\n`
        const out = def.out._zod.def
        // A transform runs on what `in` parsed, so it is typed by `in` (the source is zod's own function).
        if (out.type === 'transform')
          return noChecks(def, `${first}  return (${transform(out.transform)})(r as ${tsType(def.in)})`)
        return noChecks(def, `${first}  return ${fn(def.out)}(r)`)
      }
      case 'union':
        if (def.unionFallback) throw new Error(`${self}: unionFallback`)
        return noChecks(
          def,
          `  let r: unknown\n${def.options.map((o) => `  if ((r = ${fn(o)}(v)) !== F) return r\n`).join('')}  return F`,
        )
      case 'array': {
        const lengths = checks.map((c) => lengthCheck(c._zod.def))
        return [
          `  if (!Array.isArray(v)${lengths.map((l) => ` || !(${l})`).join('')}) return F`,
          '  const out: unknown[] = []',
          '  for (let i = 0; i < v.length; i++) {',
          `    const r = ${fn(def.element)}(v[i])`,
          '    if (r === F) return F',
          '    out.push(r)',
          '  }',
          '  return out',
        ].join('\n')
      }
      case 'object':
        helpers.isObject = true
        return noChecks(def, object(def, self))
      case 'record': {
        const key = def.keyType._zod.def
        if (key.type !== 'string' || (key.checks ?? []).length > 0 || def.mode === 'loose') {
          throw new Error(`${self}: only records with plain string keys compile`)
        }
        helpers.isPlainObject = true
        return noChecks(
          def,
          [
            '  if (!isPlainObject(v)) return F',
            '  const out: Record<string, unknown> = {}',
            '  for (const k of Reflect.ownKeys(v)) {',
            `    if (k === '__proto__' || !Object.prototype.propertyIsEnumerable.call(v, k)) continue`,
            `    if (typeof k !== 'string') return F`,
            `    const r = ${fn(def.valueType)}(v[k])`,
            '    if (r === F) return F',
            '    out[k] = r',
            '  }',
            '  return out',
          ].join('\n'),
        )
      }
      default:
        throw new Error(`${self}: zod type ${def.type} does not compile`)
    }
  }

  /** zod's object rules: shape keys in order, then the catchall (strip, refuse or keep unknown keys). */
  const object = (/** @type {any} */ def, /** @type {string} */ self) => {
    const lines = ['  if (!isObject(v)) return F', '  const out: Record<string, unknown> = {}', '  let r: unknown']
    const keys = Object.keys(def.shape)
    if (Object.getOwnPropertySymbols(def.shape).length > 0 || keys.includes('__proto__')) {
      throw new Error(`${self}: symbol or __proto__ keys`)
    }
    for (const key of keys) {
      const field = def.shape[key]
      const { optin, optout } = field._zod
      const k = JSON.stringify(key)
      const run = `(r = ${fn(field)}(v[${k}])) === F`
      if (optin === undefined && optout === undefined) {
        // Required: an absent key fails even where the schema would take undefined.
        lines.push(`  if (!(${k} in v) || ${run}) return F`, `  out[${k}] = r`)
      } else if (optin === 'optional' && optout === 'optional') {
        // Optional: absent stays absent; present (even as undefined) is kept.
        lines.push(`  if (${k} in v) {`, `    if (${run}) return F`, `    out[${k}] = r`, '  }')
      } else if (optin === 'defaulted' && optout === undefined) {
        lines.push(`  if (${run}) return F`, `  out[${k}] = r`)
      } else {
        throw new Error(`${self}.${key}: optin ${optin} / optout ${optout} does not compile`)
      }
    }
    const catchall = def.catchall?._zod.def.type
    const known = `[${keys.map((k) => JSON.stringify(k)).join(', ')}]`
    if (catchall === 'never') lines.push(`  for (const k in v) if (!${known}.includes(k)) return F`)
    else if (catchall === 'unknown') {
      lines.push(`  for (const k in v) if (!${known}.includes(k) && k !== '__proto__') out[k] = v[k]`)
    } else if (catchall !== undefined) throw new Error(`${self}: catchall ${catchall} does not compile`)
    lines.push('  return out')
    return lines.join('\n')
  }

  const exported = TARGETS.map((t) => {
    const schema = schemas[t.schema]
    if (!schema?._zod) throw new Error(`${t.schema} is not a schema`)
    const inner = fn(schema)
    return [
      `/** ${t.what[0]?.toUpperCase()}${t.what.slice(1)} as \`${t.schema}.safeParse\` reads it, or undefined where that fails. */`,
      `export function ${t.name}(data: unknown): z.output<typeof ${t.schema}> | undefined {`,
      `  const r = ${inner}(data)`,
      `  return r === F ? undefined : (r as z.output<typeof ${t.schema}>)`,
      '}',
    ].join('\n')
  })

  /** @type {Map<string, string[]>} */
  const imports = new Map()
  for (const t of TARGETS) imports.set(t.from, [...(imports.get(t.from) ?? []), t.schema])
  return [
    '// Generated by scripts/browser-parsers.mjs from the zod schemas of this package: do not edit by hand',
    '// (`node scripts/browser-parsers.mjs --write`). Only types come from zod here, so browser code that',
    '// imports these parsers carries no zod. Each answers what the schema answers on JSON data, without reasons.',
    "import type * as z from 'zod/mini'",
    ...[...imports].sort().map(([from, list]) => `import type { ${list.sort().join(', ')} } from '${from}'`),
    '',
    '/** The failure marker of the inner parsers (undefined can be a parsed value). */',
    'const F = {}',
    '',
    ...(helpers.isObject
      ? [
          'function isObject(v: unknown): v is Record<string, unknown> {',
          "  return typeof v === 'object' && v !== null && !Array.isArray(v)",
          '}',
          '',
        ]
      : []),
    ...(helpers.isPlainObject
      ? [
          "/** zod's isPlainObject: an object whose constructor, if any, has Object's prototype shape. */",
          'function isPlainObject(v: unknown): v is Record<PropertyKey, unknown> {',
          '  if (!isObject(v)) return false',
          '  const ctor = v.constructor',
          "  if (typeof ctor !== 'function') return true",
          '  const proto: unknown = ctor.prototype',
          "  return isObject(proto) && Object.prototype.hasOwnProperty.call(proto, 'isPrototypeOf')",
          '}',
          '',
        ]
      : []),
    ...exported.flatMap((e) => [e, '']),
    ...functions.flatMap((f) => [f, '']),
  ]
    .join('\n')
    .replace(/\n+$/, '\n')
}

/** The TypeScript type of what `schema` parses to, as far as a transform after it needs one. */
function tsType(/** @type {any} */ schema) {
  const type = schema._zod.def.type
  if (type === 'object') return 'Record<string, unknown>'
  if (type === 'string' || type === 'number' || type === 'boolean') return type
  throw new Error(`a transform after a ${type} does not compile`)
}

function noChecks(/** @type {any} */ def, /** @type {string} */ body) {
  if ((def.checks ?? []).length > 0) throw new Error(`checks on a ${def.type} do not compile`)
  return body
}

function stringCheck(/** @type {any} */ c) {
  if (c.check === 'min_length' || c.check === 'max_length') return lengthCheck(c)
  if (c.check === 'string_format' && c.format === 'regex') {
    if (c.pattern.global || c.pattern.sticky) throw new Error('a global or sticky regex does not compile')
    return `${String(c.pattern)}.test(v)`
  }
  throw new Error(`string check ${c.check}/${c.format} does not compile`)
}

function lengthCheck(/** @type {any} */ c) {
  if (c.check === 'min_length') return `v.length >= ${c.minimum}`
  if (c.check === 'max_length') return `v.length <= ${c.maximum}`
  throw new Error(`length check ${c.check} does not compile`)
}

function numberCheck(/** @type {any} */ c) {
  if (c.check === 'number_format' && c.format === 'safeint') return 'Number.isSafeInteger(v)'
  if (c.check === 'greater_than') return `v ${c.inclusive ? '>=' : '>'} ${c.value}`
  if (c.check === 'less_than') return `v ${c.inclusive ? '<=' : '<'} ${c.value}`
  throw new Error(`number check ${c.check}/${c.format} does not compile`)
}

/** A JSON-representable default or literal as source (a fresh array or object per use, as zod's clone). */
function literal(/** @type {unknown} */ value) {
  const text = JSON.stringify(value)
  if (
    text === undefined ||
    JSON.stringify(JSON.parse(text)) !== text ||
    (typeof value === 'number' && !Number.isFinite(value))
  ) {
    throw new Error(`${String(value)} is not a JSON literal`)
  }
  return text
}

/** A transform's source: a global builtin by name, or a self-contained function (tsc fails on a free variable). */
function transform(/** @type {Function} */ f) {
  const source = f.toString()
  if (source.includes('[native code]')) {
    if (/** @type {any} */ (globalThis)[f.name] === f) return f.name
    throw new Error(`native transform ${f.name} is not a global`)
  }
  return source
}

async function loadSchemas() {
  const { build } = await import('esbuild')
  const out = await build({
    entryPoints: [join(root, 'packages/protocol/src/index.ts')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    conditions: ['flagsync-source'],
    write: false,
    logLevel: 'silent',
  })
  const code = out.outputFiles[0]?.text ?? ''
  return import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`)
}

async function main() {
  const args = process.argv.slice(2)
  const text = generateBrowserParsers(await loadSchemas())
  if (args.includes('--write')) {
    writeFileSync(OUTPUT, text)
    console.log(`${OUTPUT} rewritten`)
  } else if (args.includes('--check')) {
    if (readFileSync(OUTPUT, 'utf8') !== text) {
      console.error(
        'browser-parsers: packages/protocol/src/browser-parsers.ts is stale (node scripts/browser-parsers.mjs --write)',
      )
      process.exitCode = 1
    }
  } else process.stdout.write(text)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main()
