import { describe, expect, it } from 'vitest'
import { ApiError, errorText } from '../src/api.js'

describe('errorText', () => {
  it('names each issue once: the ones the message already names are not repeated', () => {
    const error = new ApiError(422, {
      error: 'invalid schedule: run_at: must be in the future',
      code: 'validation_failed',
      issues: [{ path: 'run_at', message: 'must be in the future' }],
    })
    expect(errorText(error)).toBe('invalid schedule: run_at: must be in the future')
  })

  it('lists the issues the message does not name', () => {
    const error = new ApiError(422, {
      error: 'invalid flag: key: required',
      code: 'validation_failed',
      issues: [
        { path: 'key', message: 'required' },
        { path: 'rules.0.values', message: 'must not be empty' },
      ],
    })
    expect(errorText(error)).toBe('invalid flag: key: required (rules.0.values: must not be empty)')
  })
})
