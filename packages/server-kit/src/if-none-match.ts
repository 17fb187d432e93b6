/**
 * Whether an `If-None-Match` header matches the current `etag` (RFC 9110
 * §13.1.2), so the answer is 304: `*`, or a comma-separated list of entity
 * tags compared weakly — `W/"x"` and `"x"` match each other. A header that is
 * not a valid list matches nothing (the full answer is always safe).
 */
export function ifNoneMatchHits(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false
  const value = Array.isArray(header) ? header.join(',') : header
  if (value.trim() === '*') return true
  const current = opaqueTag(etag)
  if (current === undefined) return false
  // entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE; etagc excludes DQUOTE, so a comma inside quotes is part of the tag.
  const list = /\s*(?:W\/)?("[^"]*")\s*(?:,|$)/y
  let at = 0
  let hit = false
  while (at < value.length && value.slice(at).trim() !== '') {
    list.lastIndex = at
    const match = list.exec(value)
    if (!match) {
      // An empty element (`"a", , "b"`) is allowed by the list syntax; anything else makes the header invalid.
      const empty = /\s*,/y
      empty.lastIndex = at
      if (!empty.exec(value)) return false
      at = empty.lastIndex
      continue
    }
    if (match[1] === current) hit = true
    at = list.lastIndex
  }
  return hit
}

/** `"x"` of `"x"` or `W/"x"`. */
function opaqueTag(etag: string): string | undefined {
  const match = /^(?:W\/)?("[^"]*")$/.exec(etag.trim())
  return match?.[1]
}
