// Browser parsers: compiles the zod/mini schemas the flag client parses into plain functions, so the
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
  /** @type {Map<string, string>} */
  const exprs = new Map()
  /** @type {string[]} */
  const consts = []
  /** @type {Set<string>} */
  const used = new Set()
  const use = (/** @type {string} */ block) => {
    used.add(block)
    return block
  }

  /**
   * The name of the parser for `schema`, defined on first use, after what it uses. Schemas that compile to the
   * same expression share one (zod builds a new `z.string()` for every use); a z.lazy is defined before its inner
   * schema, through a thunk, so recursion ends there.
   */
  const fn = (/** @type {any} */ schema) => {
    const known = names.get(schema)
    if (known) return known
    if (schema._zod.def.type === 'lazy') {
      const name = `p${consts.length}`
      names.set(schema, name)
      const slot = consts.push('') - 1
      consts[slot] = `const ${name}: P = /* @__PURE__ */ ${use('lazy')}(() => ${fn(schema._zod.def.getter())})`
      return name
    }
    const expr = compile(schema)
    const name = exprs.get(expr) ?? `p${consts.length}`
    names.set(schema, name)
    if (!exprs.has(expr)) {
      exprs.set(expr, name)
      consts.push(`const ${name}: P = ${expr.includes('(') ? '/* @__PURE__ */ ' : ''}${expr}`)
    }
    return name
  }

  /** The expression building `schema`'s parser from the blocks of parse-kit.ts. */
  const compile = (/** @type {any} */ schema) => {
    const def = schema._zod.def
    const checks = (def.checks ?? []).map((/** @type {any} */ c) => c._zod.def)
    switch (def.type) {
      case 'string': {
        const { min, max, re } = lengths(checks, true)
        return `${use('str')}(${args([min, max, re], [0, 'Number.POSITIVE_INFINITY'])})`
      }
      case 'number':
        return `${use('num')}(${args(numberBounds(checks), [])})`
      case 'boolean':
        return noChecks(def, use('bool'))
      case 'null':
        return noChecks(def, `${use('oneOf')}(null)`)
      case 'unknown':
        return noChecks(def, use('any'))
      case 'never':
        return noChecks(def, use('never'))
      case 'literal':
        return noChecks(def, `${use('oneOf')}(${def.values.map(literal).join(', ')})`)
      case 'enum':
        return noChecks(def, `${use('oneOf')}(${Object.values(def.entries).map(literal).join(', ')})`)
      case 'nullable':
        return noChecks(def, `${use('nullable')}(${fn(def.innerType)})`)
      case 'optional':
        if (def.innerType._zod.optin !== undefined) throw new Error('optional of an optional or defaulted schema')
        return noChecks(def, `${use('optional')}(${fn(def.innerType)})`)
      case 'default':
        if (def.innerType._zod.optin !== undefined) throw new Error('default of an optional or defaulted schema')
        return noChecks(def, `${use('withDefault')}(${fn(def.innerType)}, () => ${literal(def.defaultValue)})`)
      case 'pipe': {
        const out = def.out._zod.def
        // A zod transform is the schema's own function, copied as source and typed by what `in` parses.
        if (out.type !== 'transform') throw new Error(`a pipe into ${out.type} does not compile`)
        return noChecks(def, `${use('pipe')}(${fn(def.in)}, ${transform(out.transform, tsType(def.in))})`)
      }
      case 'union':
        if (def.unionFallback) throw new Error('unionFallback does not compile')
        return noChecks(def, `${use('union')}(${def.options.map(fn).join(', ')})`)
      case 'array': {
        const { min, max } = lengths(checks, false)
        return `${use('array')}(${args([fn(def.element), min, max], [undefined, 0, 'Number.POSITIVE_INFINITY'])})`
      }
      case 'object':
        return noChecks(def, object(def))
      case 'record': {
        const key = def.keyType._zod.def
        if (key.type !== 'string' || (key.checks ?? []).length > 0 || def.mode === 'loose') {
          throw new Error('only records with plain string keys compile')
        }
        return noChecks(def, `${use('record')}(${fn(def.valueType)})`)
      }
      case 'custom':
        // The one custom schema: its check is parse-kit's `json` block (both are `isJsonValue`).
        if (schema !== schemas.flagValueSchema) throw new Error('only flagValueSchema compiles of the custom schemas')
        return noChecks(def, use('json'))
      default:
        throw new Error(`zod type ${def.type} does not compile`)
    }
  }

  /** zod's object: the field's own optin/optout decide absent keys, the catchall decides unknown ones. */
  const object = (/** @type {any} */ def) => {
    const keys = Object.keys(def.shape)
    if (Object.getOwnPropertySymbols(def.shape).length > 0 || keys.includes('__proto__')) {
      throw new Error('symbol or __proto__ keys do not compile')
    }
    const fields = keys.map((key) => {
      const field = def.shape[key]
      const { optin, optout } = field._zod
      const type = field._zod.def.type
      // parse-kit marks optional() and withDefault() parsers; anything else must be a required field.
      const kind =
        optin === 'optional' && optout === 'optional' && type === 'optional'
          ? 'o'
          : optin === 'defaulted' && optout === undefined && type === 'default'
            ? 'd'
            : optin === undefined && optout === undefined && type !== 'optional' && type !== 'default'
              ? 'r'
              : undefined
      if (!kind) throw new Error(`field ${key}: ${type} with optin ${optin} / optout ${optout} does not compile`)
      return `${/^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key)}: ${fn(field)}`
    })
    const catchall = def.catchall?._zod.def.type
    const mode =
      catchall === undefined ? 'strip' : catchall === 'never' ? 'strict' : catchall === 'unknown' ? 'loose' : ''
    if (!mode) throw new Error(`catchall ${catchall} does not compile`)
    return `${use('object')}({ ${fields.join(', ')} }, '${mode}')`
  }

  const exported = TARGETS.map((t) => {
    const schema = schemas[t.schema]
    if (!schema?._zod) throw new Error(`${t.schema} is not a schema`)
    const inner = fn(schema)
    return [
      `/** ${t.what[0]?.toUpperCase()}${t.what.slice(1)} as \`${t.schema}.safeParse\` reads it, or undefined where that fails. */`,
      `export function ${t.name}(data: unknown): z.output<typeof ${t.schema}> | undefined {`,
      `  return ${use('result')}(${inner}(data))`,
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
    `import { ${[...used].sort().join(', ')}, type P } from './parse-kit.js'`,
    '',
    ...consts,
    '',
    ...exported.flatMap((e) => [e, '']),
  ]
    .join('\n')
    .replace(/\n+$/, '\n')
}

/** Trailing arguments equal to their defaults left out. */
function args(/** @type {unknown[]} */ values, /** @type {unknown[]} */ defaults) {
  const out = values.map((v) => (v === undefined ? 'undefined' : String(v)))
  while (
    out.length > 0 &&
    (values[out.length - 1] === undefined || values[out.length - 1] === defaults[out.length - 1])
  ) {
    out.pop()
  }
  return out.join(', ')
}

/** The length bounds (and for strings the pattern) of a string's or array's checks. */
function lengths(/** @type {any[]} */ checks, /** @type {boolean} */ string) {
  let min = 0
  /** @type {number | string} */
  let max = 'Number.POSITIVE_INFINITY'
  /** @type {string | undefined} */
  let re
  for (const c of checks) {
    if (c.check === 'min_length') min = Math.max(min, c.minimum)
    else if (c.check === 'max_length') max = typeof max === 'number' ? Math.min(max, c.maximum) : c.maximum
    else if (string && c.check === 'string_format' && c.format === 'regex' && re === undefined) {
      if (c.pattern.global || c.pattern.sticky) throw new Error('a global or sticky regex does not compile')
      re = String(c.pattern)
    } else throw new Error(`check ${c.check}/${c.format} does not compile here`)
  }
  return { min, max, re }
}

/** `[int, lo, hi]` from a number's checks (inclusive bounds only). */
function numberBounds(/** @type {any[]} */ checks) {
  let int = false
  /** @type {number | undefined} */
  let lo
  /** @type {number | undefined} */
  let hi
  for (const c of checks) {
    if (c.check === 'number_format' && c.format === 'safeint') int = true
    else if (c.check === 'greater_than' && c.inclusive) lo = Math.max(lo ?? c.value, c.value)
    else if (c.check === 'less_than' && c.inclusive) hi = Math.min(hi ?? c.value, c.value)
    else throw new Error(`number check ${c.check}/${c.format} (inclusive: ${c.inclusive}) does not compile`)
  }
  return [int, lo ?? (hi === undefined ? undefined : 'Number.NEGATIVE_INFINITY'), hi]
}

function noChecks(/** @type {any} */ def, /** @type {string} */ body) {
  if ((def.checks ?? []).length > 0) throw new Error(`checks on a ${def.type} do not compile`)
  return body
}

/** The TypeScript type of what `schema` parses to, as far as a transform after it needs one. */
function tsType(/** @type {any} */ schema) {
  const type = schema._zod.def.type
  if (type === 'object') return 'Record<string, unknown>'
  if (type === 'string' || type === 'number' || type === 'boolean') return type
  throw new Error(`a transform after a ${type} does not compile`)
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
function transform(/** @type {Function} */ f, /** @type {string} */ type) {
  const source = f.toString()
  if (source.includes('[native code]')) {
    if (/** @type {any} */ (globalThis)[f.name] === f) return f.name
    throw new Error(`native transform ${f.name} is not a global`)
  }
  return `(${source}) as (v: ${type}) => unknown`
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
