import { describe, expect, it } from 'vitest'
import { approvalGate } from '../../src/flags/write-flag.js'

describe('approvalGate (pure): who may change a flag where approval is required', () => {
  it('without approval every change applies, for every role that may write', () => {
    for (const kind of ['create', 'replace', 'patch', 'delete'] as const) {
      expect(approvalGate(kind, false, 'editor', 'Production')).toBe('apply')
    }
  })

  it('a new flag is created by an editor; a patch is reviewed whoever sends it', () => {
    expect(approvalGate('create', true, 'editor', 'Production')).toBe('apply')
    expect(approvalGate('patch', true, 'editor', 'Production')).toBe('review')
    expect(approvalGate('patch', true, 'admin', 'Production')).toBe('review')
  })

  it('replacing or deleting an existing flag needs the project admin role: only a patch can be reviewed', () => {
    expect(approvalGate('replace', true, 'admin', 'Production')).toBe('apply')
    expect(approvalGate('delete', true, 'admin', 'Production')).toBe('apply')
    expect(approvalGate('replace', true, 'editor', 'Production')).toEqual({
      forbidden:
        'Production requires approval: replacing a flag needs the project admin role; send a PATCH to file a change request',
    })
    expect(
      approvalGate('replace', true, 'editor', 'Production', { replacing: 'promoting over an existing flag' }),
    ).toEqual({
      forbidden: expect.stringMatching(/^Production requires approval: promoting over an existing flag needs/),
    })
    expect(approvalGate('delete', true, 'editor', 'Production')).toEqual({
      forbidden:
        'Production requires approval: deleting a flag needs the project admin role (a change request cannot delete)',
    })
  })
})
