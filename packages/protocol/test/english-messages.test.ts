import { enableEnglishMessages, flagSchema, formatZodError } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'
import { config } from 'zod/mini'

const failure = () => {
  const result = flagSchema.safeParse({ key: 'a', is_enabled: 'yes' })
  if (result.success) throw new Error('expected a failure')
  return formatZodError(result.error)
}

// The order matters: the first test sees zod/mini as a browser bundle does (no locale loaded).
describe('enableEnglishMessages', () => {
  it('is needed: zod/mini alone reports a bare "Invalid input" (so browsers do not ship the locale)', () => {
    expect(config().localeError).toBeUndefined()
    expect(failure()).toBe('is_enabled: Invalid input')
  })

  it("gives zod's English messages, as the servers answer them", () => {
    enableEnglishMessages()
    expect(failure()).toBe('is_enabled: Invalid input: expected boolean, received string')
  })

  it('keeps a locale configured before', () => {
    const english = config().localeError
    try {
      config({ localeError: () => 'auf Deutsch' })
      enableEnglishMessages()
      expect(failure()).toBe('is_enabled: auf Deutsch')
    } finally {
      config({ localeError: english })
    }
  })
})
