export interface SseEvent {
  event?: string
  /** Any text; line breaks are split into several `data:` lines so they cannot end the event early. */
  data: string
  id?: string | number
}

const LINE_BREAK = /\r\n|\r|\n/

function assertSingleLine(field: string, value: string): void {
  if (LINE_BREAK.test(value)) throw new TypeError(`SSE ${field} must not contain a line break`)
}

/** Frames one event per the EventSource spec. Pure: the same input always gives the same bytes. */
export function formatSseEvent(event: SseEvent): string {
  let out = ''
  if (event.event !== undefined) {
    assertSingleLine('event', event.event)
    out += `event: ${event.event}\n`
  }
  if (event.id !== undefined) {
    const id = String(event.id)
    assertSingleLine('id', id)
    if (id.includes('\0')) throw new TypeError('SSE id must not contain NUL')
    out += `id: ${id}\n`
  }
  for (const line of event.data.split(LINE_BREAK)) out += `data: ${line}\n`
  return `${out}\n`
}

/** A comment line, ignored by EventSource; used for keep-alives. */
export function formatSseComment(text = ''): string {
  return `${text
    .split(LINE_BREAK)
    .map((line) => `: ${line}`)
    .join('\n')}\n\n`
}

/** `retry:` tells EventSource how long to wait before reconnecting. */
export function formatSseRetry(ms: number): string {
  return `retry: ${Math.max(0, Math.floor(ms))}\n\n`
}

/**
 * The revision an EventSource resumes from (its `Last-Event-ID` header), or
 * undefined when there is none or it is not a plain decimal revision: the
 * caller then starts the client from scratch.
 */
export function parseLastEventId(header: string | string[] | undefined): number | undefined {
  if (typeof header !== 'string' || !/^(0|[1-9]\d{0,15})$/.test(header.trim())) return undefined
  const revision = Number(header.trim())
  return Number.isSafeInteger(revision) ? revision : undefined
}
