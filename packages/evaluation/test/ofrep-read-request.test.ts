import { fromOpenFeatureContext, ofrepReadRequest } from '@flagsync/evaluation'
import { ofrepContextSchema, ofrepEvaluationRequestSchema } from '@flagsync/protocol'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

/** What the protocol's schemas say of a request body: the context it carries, or which check refuses it. */
function bySchemas(body: unknown) {
  const request = ofrepEvaluationRequestSchema.safeParse(body)
  if (!request.success) return { ok: false, errorCode: 'PARSE_ERROR' }
  const context = ofrepContextSchema.safeParse(request.data.context ?? {})
  if (!context.success) return { ok: false, errorCode: 'INVALID_CONTEXT' }
  return { ok: true, context: fromOpenFeatureContext(context.data) }
}

// Bodies as JSON.parse hands them over, with the shapes near each check made likely.
const attribute = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }))
const contextArb = fc.oneof(
  fc.dictionary(fc.string(), attribute, { maxKeys: 4 }),
  fc
    .record({ targetingKey: attribute }, { requiredKeys: [] })
    .chain((head) => fc.dictionary(fc.string(), attribute, { maxKeys: 3 }).map((rest) => ({ ...rest, ...head }))),
  fc.jsonValue({ maxDepth: 2 }),
)
const bodyArb = fc.oneof(
  fc.record({ context: contextArb }, { requiredKeys: [] }),
  fc
    .dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })
    .chain((rest) => contextArb.map((context) => ({ ...rest, context }))),
  fc.jsonValue({ maxDepth: 3 }),
)

describe('ofrepReadRequest, the hand check of the bulk route', () => {
  it('accepts and refuses exactly what the protocol schemas do, with the same context', () => {
    fc.assert(
      fc.property(bodyArb, (body) => {
        const read = ofrepReadRequest(JSON.parse(JSON.stringify(body)))
        const expected = bySchemas(JSON.parse(JSON.stringify(body)))
        if (read.ok) expect({ ok: true, context: read.context }).toEqual(expected)
        else expect({ ok: false, errorCode: read.errorCode }).toEqual(expected)
      }),
      { numRuns: 2000 },
    )
  })

  it('leaves out an attribute named __proto__, as the schemas do, whatever its value', () => {
    for (const text of [
      '{"context":{"__proto__":false,"plan":"pro"}}',
      '{"context":{"__proto__":{"plan":"pro"},"targetingKey":"u-1"}}',
      '{"context":{"nested":{"__proto__":1}}}',
    ]) {
      const read = ofrepReadRequest(JSON.parse(text))
      expect(read.ok, text).toBe(true)
      if (read.ok) expect(read.context, text).toEqual(bySchemas(JSON.parse(text)).context)
      if (read.ok) expect(Object.getPrototypeOf(read.context), text).toBe(Object.prototype)
    }
  })
})
