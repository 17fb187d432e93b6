import { describe, expect, it } from 'vitest'
import { commitMessageProblems } from '../../scripts/check-commits.mjs'

describe('commit message convention', () => {
  it('accepts a typed subject with a scope and a body', () => {
    expect(
      commitMessageProblems('fix(service): audit segment writes\n\nSegment rows were in no audit route.\n'),
    ).toEqual([])
    expect(commitMessageProblems('feat: client keys\n\nPages need a key that cannot write.')).toEqual([])
  })

  it('refuses a subject without a type', () => {
    expect(commitMessageProblems('flag service: audit segment writes\n\nwhy')).toEqual([
      expect.stringContaining('type(scope): summary'),
    ])
  })

  it('refuses a subject over 72 characters', () => {
    const subject = `fix(service): ${'x'.repeat(60)}`
    expect(commitMessageProblems(`${subject}\n\nwhy`)).toEqual([
      `subject has ${subject.length} characters (at most 72)`,
    ])
  })

  it('refuses a message without a body, or with the body glued to the subject', () => {
    expect(commitMessageProblems('fix(service): audit segment writes')).toEqual(['no body saying why'])
    expect(commitMessageProblems('fix(service): audit segment writes\nwhy')).toEqual([
      'no blank line between subject and body',
      'no body saying why',
    ])
  })
})
