import { describe, expect, it } from 'vitest'
import { ApiError } from '../src/api.js'
import { type ComparedFlag, type Comparison, promotionRefusalOf } from '../src/use-compare.js'

const flag = (key: string): ComparedFlag => ({
  key,
  status: 'only_in_from',
  from_revision: 3,
  to_revision: null,
  differences: [],
})
const flags = [flag('gated'), flag('gone'), flag('odd')]
const comparison: Comparison = { from: { id: 's', name: 'Staging' }, to: { id: 'p', name: 'Production' }, flags }
/** A 422 of `POST /api/projects/:id/promote` with these issues, as the service words them. */
const refused = (issues: Array<{ path: string; message: string }>) =>
  new ApiError(422, { error: 'invalid promotion: …; nothing was promoted', code: 'validation_failed', issues })

describe('a refused promotion, flag by flag', () => {
  it('names the prerequisite to choose too, a flag gone from the source, and any other issue', () => {
    const error = refused([
      { path: 'flags[0].prerequisites[0].flag_key', message: 'no flag "gate" in this environment' },
      { path: 'flags[1].key', message: 'no flag "gone" in Staging' },
      { path: 'flags[2].variants', message: 'must not be empty' },
    ])
    expect(promotionRefusalOf(error, flags, comparison)).toEqual([
      'gated needs gate, which Production does not have: choose gate too.',
      'gone is no longer in Staging: refresh the comparison.',
      'odd: variants must not be empty.',
    ])
  })

  it('is null for a refusal naming no flag, a conflict or any other failure', () => {
    expect(promotionRefusalOf(refused([{ path: 'to_env_id', message: 'no environment' }]), flags, comparison)).toBe(
      null,
    )
    expect(promotionRefusalOf(new ApiError(409, { error: 'changed', code: 'conflict' }), flags, comparison)).toBe(null)
    expect(promotionRefusalOf(new Error('offline'), flags, comparison)).toBe(null)
  })
})
