import { readFileSync } from 'node:fs'
import * as protocol from '@flagsync/protocol'
import {
  applyFlagPatch,
  connectedDataSchema,
  type Flag,
  flagPatchSchema,
  flagSchema,
  parseConnectedData,
  parseFlag,
  parseFlagPatch,
  parseSnapshot,
  parseStreamUpdate,
  patchFlag,
  snapshotSchema,
  streamUpdateSchema,
} from '@flagsync/protocol'
import { build } from 'esbuild'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type * as z from 'zod/mini'
import { generateBrowserParsers, OUTPUT, TARGETS } from '../../../scripts/browser-parsers.mjs'

type Parser = (data: unknown) => unknown
const PAIRS: Array<[string, z.ZodMiniType, Parser]> = [
  ['connected', connectedDataSchema, parseConnectedData],
  ['update', streamUpdateSchema, parseStreamUpdate],
  ['snapshot', snapshotSchema, parseSnapshot],
  ['patch', flagPatchSchema, parseFlagPatch],
  ['flag', flagSchema, parseFlag],
]

/** The generated parser answers what zod answers: failure, or the same value with the same keys in the same order. */
function agrees(schema: z.ZodMiniType, parse: Parser, input: unknown): void {
  const expected = schema.safeParse(input)
  const actual = parse(input)
  expect(actual === undefined, JSON.stringify(input)?.slice(0, 300)).toBe(!expected.success)
  if (expected.success) {
    expect(actual).toStrictEqual(expected.data)
    expect(JSON.stringify(actual)).toBe(JSON.stringify(expected.data))
  }
}

const OPERATORS = ['equals', 'not_equals', 'contains', 'starts_with', 'ends_with', 'greater_than', 'less_than_or_equal']
const text = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom(
    '',
    'a',
    'ok-key_1',
    'bad key',
    'é',
    'x'.repeat(100),
    'x'.repeat(101),
    'x'.repeat(256),
    'x'.repeat(257),
  ),
)
const num = fc.oneof(
  fc.integer({ min: -2, max: 102 }),
  fc.constantFrom(1.5, -0, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, 1e300),
)
const anything = fc.oneof(text, num, fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }))
/** Mostly a value of the field's kind, sometimes anything at all. */
const field = <T>(valid: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 4, arbitrary: valid as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: anything })
const json = fc.jsonValue({ maxDepth: 2 })
const rule = fc.record(
  {
    attribute: field(text),
    operator: field(fc.constantFrom(...OPERATORS, 'near')),
    values: field(fc.array(text, { maxLength: 3 })),
    segment_key: field(fc.oneof(text, fc.constant(null))),
    variant: json,
    extra: anything,
  },
  { requiredKeys: [] },
)
const flagLike = fc.record(
  {
    key: field(text),
    is_enabled: field(fc.boolean()),
    rollout_percentage: field(fc.oneof(num, fc.constant(null))),
    description: field(fc.oneof(text, fc.constant(null))),
    rules: field(fc.array(rule, { maxLength: 3 })),
    flag_type: field(fc.constantFrom('boolean', 'string', 'integer', 'json', 'other')),
    default_value: json,
    disabled_value: json,
    variants: field(
      fc.array(fc.record({ weight: field(num), value: json, extra: anything }, { requiredKeys: [] }), { maxLength: 3 }),
    ),
    prerequisites: field(
      fc.array(fc.record({ flag_key: field(text), required_value: json, extra: anything }, { requiredKeys: [] }), {
        maxLength: 2,
      }),
    ),
    revision: field(num),
    surplus: anything,
  },
  { requiredKeys: [] },
)
const INPUTS: Record<string, fc.Arbitrary<unknown>> = {
  connected: fc.oneof(
    fc.constantFrom(true, false),
    fc.record({ environment_id: field(fc.oneof(text, fc.constant(null))), extra: anything }, { requiredKeys: [] }),
    anything,
  ),
  update: fc.oneof(
    fc.record(
      {
        type: field(fc.constantFrom('UPSERT', 'DELETE', 'upsert')),
        flag: field(flagLike),
        key: field(text),
        env_id: field(text),
        extra: anything,
      },
      { requiredKeys: [] },
    ),
    anything,
  ),
  snapshot: fc.oneof(fc.array(field(flagLike), { maxLength: 3 }), anything),
  patch: fc.oneof(flagLike, anything),
  flag: fc.oneof(flagLike, anything),
}

describe('generated browser parsers', () => {
  it('are what the schemas generate (node scripts/browser-parsers.mjs --write)', () => {
    expect(readFileSync(OUTPUT, 'utf8')).toBe(generateBrowserParsers(protocol))
    expect(TARGETS.map((t) => t.name).sort()).toEqual(PAIRS.map(([, , p]) => p.name).sort())
  })

  it.each(PAIRS)('%s: agrees with zod on JSON data', (name, schema, parse) => {
    fc.assert(
      fc.property(INPUTS[name] as fc.Arbitrary<unknown>, (input) => {
        agrees(schema, parse, JSON.parse(JSON.stringify(input) ?? 'null'))
      }),
      { numRuns: 400 },
    )
  })

  it.each(PAIRS.filter(([name]) => name === 'patch' || name === 'flag'))(
    '%s: agrees with zod on objects with undefined fields (local edits)',
    (name, schema, parse) => {
      const withHoles = fc.oneof(fc.constant(undefined), INPUTS[name] as fc.Arbitrary<unknown>)
      fc.assert(
        fc.property(fc.dictionary(fc.constantFrom('key', 'is_enabled', 'description', 'rules', 'x'), withHoles), (d) =>
          agrees(schema, parse, { key: 'f', is_enabled: true, ...d }),
        ),
        { numRuns: 300 },
      )
    },
  )

  const flag = { key: 'f', is_enabled: true }
  const rules = (n: number) => Array.from({ length: n }, () => ({ attribute: 'a', operator: 'equals', values: ['x'] }))
  it.each([
    ['flag', { ...flag, description: 'd'.repeat(10_000) }],
    ['flag', { ...flag, description: 'd'.repeat(10_001) }],
    ['flag', { ...flag, rules: rules(200) }],
    ['flag', { ...flag, rules: rules(201) }],
    ['flag', { ...flag, rules: [{ attribute: 'a', operator: 'equals', values: Array(1000).fill('v') }] }],
    ['flag', { ...flag, rules: [{ attribute: 'a', operator: 'equals', values: Array(1001).fill('v') }] }],
    ['flag', { ...flag, rules: [{ attribute: 'a', operator: 'equals', values: [] }] }],
    ['flag', { ...flag, revision: 7 }],
    ['flag', Object.create({ key: 'f', is_enabled: true })],
    ['snapshot', [{ ...flag, variants: Array(100).fill({ weight: 1, value: 'v' }) }]],
    ['snapshot', [{ ...flag, variants: Array(101).fill({ weight: 1, value: 'v' }) }]],
    ['snapshot', JSON.parse('[{"key":"f","is_enabled":true,"__proto__":{"x":1},"newer_field":[1]}]')],
    ['snapshot', JSON.parse('[{"key":"f","is_enabled":true,"default_value":{"__proto__":1,"a":[{"b":null}]}}]')],
    ['snapshot', [{ ...flag, default_value: new Date(0) }]],
    ['snapshot', [{ ...flag, default_value: { [Symbol('s')]: 1 } }]],
    ['snapshot', [{ ...flag, default_value: Object.create(null) }]],
    ['snapshot', [{ ...flag, default_value: Array(2) }]],
    ['snapshot', [{ ...flag, default_value: Number.NaN }]],
    ['snapshot', [{ ...flag, variants: [{ weight: Number.MAX_SAFE_INTEGER + 2, value: 'v' }] }]],
    ['snapshot', [{ ...flag, variants: [{ weight: Number.MAX_SAFE_INTEGER, value: 'v' }] }]],
    ['flag', { ...flag, revision: 2 ** 53 }],
    ['patch', JSON.parse('{"__proto__":{"is_enabled":true}}')],
    ['patch', { revision: 3, is_enabled: false }],
    ['update', { type: 'DELETE', key: 'f', flag: 'ignored', extra: 1 }],
    ['connected', { environment_id: 'env', extra: 1 }],
  ] as Array<[string, unknown]>)('%s: agrees with zod on boundary case %#', (name, input) => {
    const [, schema, parse] = PAIRS.find(([n]) => n === name) as (typeof PAIRS)[number]
    agrees(schema, parse, input)
  })
})

describe('patchFlag', () => {
  const base: Flag = { key: 'f', is_enabled: true, rollout_percentage: 10, description: 'd', rules: [] }
  it('answers what applyFlagPatch answers, without the reasons', () => {
    fc.assert(
      fc.property(INPUTS.patch as fc.Arbitrary<unknown>, fc.constantFrom('f', 'g'), (patch, key) => {
        const slow = applyFlagPatch({ ...base, key }, patch)
        const fast = patchFlag({ ...base, key }, patch)
        expect(fast).toStrictEqual(slow.ok ? slow.flag : undefined)
      }),
      { numRuns: 400 },
    )
    expect(patchFlag(base, { key: 'f', rollout_percentage: null })).toEqual({ ...base, rollout_percentage: null })
    expect(patchFlag(base, { key: 'g' })).toBeUndefined()
  })
})

describe('browser bundles', () => {
  it('carry no zod: the parsers and patchFlag tree-shake away from the schemas', async () => {
    const out = await build({
      stdin: {
        contents:
          "export { parseConnectedData, parseStreamUpdate, parseSnapshot, patchFlag } from '@flagsync/protocol'",
        resolveDir: process.cwd(),
        loader: 'js',
      },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      conditions: ['flagsync-source'],
      write: false,
      metafile: true,
      logLevel: 'silent',
    })
    // What ends up in the bundle (the metafile's `inputs` also lists what was read and then shaken off).
    const inputs = Object.values(out.metafile.outputs).flatMap((o) =>
      Object.entries(o.inputs)
        .filter(([, i]) => i.bytesInOutput > 0)
        .map(([path]) => path),
    )
    expect(inputs.filter((i) => i.includes('node_modules/zod'))).toEqual([])
    expect(inputs.some((i) => i.endsWith('browser-parsers.ts'))).toBe(true)
  })
})
