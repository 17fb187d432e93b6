import { formatSseComment, formatSseEvent, formatSseRetry, parseLastEventId } from '@flagsync/server-kit'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

function parseAll(text: string): EventSourceMessage[] {
  const events: EventSourceMessage[] = []
  const parser = createParser({ onEvent: (e) => events.push(e) })
  parser.feed(text)
  return events
}

describe('formatSseEvent', () => {
  it('frames event, id and data', () => {
    expect(formatSseEvent({ event: 'update', id: 7, data: '{"a":1}' })).toBe('event: update\nid: 7\ndata: {"a":1}\n\n')
  })

  it('splits data with any kind of line break into several data lines', () => {
    expect(formatSseEvent({ data: 'a\nb\r\nc\rd' })).toBe('data: a\ndata: b\ndata: c\ndata: d\n\n')
  })

  it('rejects line breaks in event names and ids', () => {
    expect(() => formatSseEvent({ event: 'x\ny', data: '' })).toThrow(/line break/)
    expect(() => formatSseEvent({ id: 'x\ry', data: '' })).toThrow(/line break/)
  })

  it('round-trips arbitrary data through a real SSE parser (line breaks normalized to \\n)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme-ascii' }), (data, name) => {
        const event = name.replace(/[\r\n]/g, '') || 'message'
        const [parsed, ...rest] = parseAll(formatSseEvent({ event, data }))
        expect(rest).toEqual([])
        expect(parsed?.data).toBe(data.replace(/\r\n|\r/g, '\n'))
        if (event !== 'message') expect(parsed?.event).toBe(event)
      }),
    )
  })
})

describe('comments and retry', () => {
  it('are ignored by a parser', () => {
    expect(parseAll(formatSseComment('keep-alive') + formatSseComment('a\nb'))).toEqual([])
    expect(formatSseRetry(1500)).toBe('retry: 1500\n\n')
  })
})

describe('parseLastEventId', () => {
  it('accepts a plain decimal revision and nothing else', () => {
    expect(parseLastEventId('0')).toBe(0)
    expect(parseLastEventId('42')).toBe(42)
    expect(parseLastEventId(' 42 ')).toBe(42)
    for (const bad of [undefined, '', '-1', '1.5', '1e3', '0x10', '007', 'abc', '99999999999999999', ['1', '2']]) {
      expect(parseLastEventId(bad), String(bad)).toBeUndefined()
    }
  })
})
