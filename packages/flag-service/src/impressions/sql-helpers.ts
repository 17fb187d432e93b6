// Small helpers shared by the store's statements, whatever the dialect.

/** A number column as a driver returns it: pg answers bigints (and counts) as strings. */
export type Num = number | string

/** Rows per INSERT statement of impressions or pairs (each is one statement of a few bound values). */
export const ROWS_PER_STATEMENT = 5000

const placeholderCache = new Map<string, string>()
/** `(?,?,?),(?,?,?)…` for `rows` rows of `columns` values, built once per shape. */
export function placeholders(rows: number, columns: number): string {
  const key = `${rows}x${columns}`
  let text = placeholderCache.get(key)
  if (text === undefined) {
    const one = `(${new Array(columns).fill('?').join(',')})`
    text = new Array(rows).fill(one).join(',')
    if (placeholderCache.size > 64) placeholderCache.clear()
    placeholderCache.set(key, text)
  }
  return text
}

/** Rows of a raw statement: SQLite's driver answers the array, pg a result object. */
export function rowsOf<R>(result: unknown): R[] {
  if (Array.isArray(result)) return result as R[]
  return ((result as { rows?: R[] } | undefined)?.rows ?? []) as R[]
}

export const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
export const byNumber = (a: number, b: number) => a - b

export function chunks<T>(items: readonly T[], size = ROWS_PER_STATEMENT): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
