import type { FlagType, FlagValue } from '@flagsync/protocol'

/** A value as typed in the editor, parsed for the flag's type, or why it does not fit. */
export type Parsed = { ok: true; value: FlagValue } | { ok: false; error: string }

export function parseValue(type: FlagType, text: string): Parsed {
  switch (type) {
    case 'boolean':
      if (text === 'true' || text === 'false') return { ok: true, value: text === 'true' }
      return { ok: false, error: 'true or false' }
    case 'integer': {
      const n = Number(text.trim())
      if (text.trim() === '' || !Number.isSafeInteger(n)) return { ok: false, error: 'a whole number' }
      return { ok: true, value: n }
    }
    case 'string':
      return { ok: true, value: text }
    case 'json':
      try {
        return { ok: true, value: JSON.parse(text) as FlagValue }
      } catch {
        return { ok: false, error: 'valid JSON (strings in double quotes)' }
      }
  }
}

/** The editor's text for a value of a type: what parseValue reads back to the same value. */
export function valueText(type: FlagType, value: FlagValue | undefined): string {
  if (value === undefined) return type === 'boolean' ? 'true' : ''
  if (type === 'string' && typeof value === 'string') return value
  return JSON.stringify(value)
}
