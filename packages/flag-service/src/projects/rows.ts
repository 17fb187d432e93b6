import { iso, type Num } from '../records.js'

export interface ProjectRow {
  id: string
  name: string
  slug: string
  created_at: Num
  environment_count?: Num
  member_count?: Num
}

export const projectJson = (row: ProjectRow) => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  environment_count: Number(row.environment_count ?? 0),
  member_count: Number(row.member_count ?? 0),
  created_at: iso(row.created_at),
})
