/** A copy of `list` with the item at `index` replaced: the editor's rows are positional. */
export function replaceAt<T>(list: readonly T[], index: number, item: T): T[] {
  return list.map((x, i) => (i === index ? item : x))
}
