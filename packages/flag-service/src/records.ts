// What every resource's rows share: the database hands bigints back as strings on PostgreSQL and booleans as
// numbers on SQLite; the API sends times as ISO strings. Each resource's `rows.ts` has its row and its JSON.

export type Num = number | string
export type Bool = boolean | number

export const iso = (ms: Num): string => new Date(Number(ms)).toISOString()
export const isoOrNull = (ms: Num | null | undefined): string | null =>
  ms === null || ms === undefined ? null : iso(ms)
