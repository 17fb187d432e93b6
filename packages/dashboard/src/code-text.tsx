import type { ReactNode } from 'react'

/** A part of a sentence between backticks: a key or a value, as `describeFlag` and `sentenceOf` quote them. */
const QUOTED = /`([^`]+)`/g

/**
 * A generated sentence as the reader sees it: each quoted key or value set as code, never a raw backtick.
 * @example <CodeText text="everyone gets `true`" /> renders everyone gets <code>true</code>
 */
export function CodeText(props: { text: string }) {
  const parts: ReactNode[] = []
  let at = 0
  for (const m of props.text.matchAll(QUOTED)) {
    parts.push(props.text.slice(at, m.index), <code key={m.index}>{m[1]}</code>)
    at = m.index + m[0].length
  }
  parts.push(props.text.slice(at))
  return parts
}
