/** `environments` sorted by `ids`; any not named keep their relative order after the named ones. */
export function inOrder<T extends { id: string }>(environments: readonly T[], ids: readonly string[]): T[] {
  const rank = new Map(ids.map((id, i) => [id, i]))
  return [...environments].sort((a, b) => (rank.get(a.id) ?? ids.length) - (rank.get(b.id) ?? ids.length))
}
