import { type Bool, iso, type Num } from '../records.js'

export interface EnvironmentRow {
  id: string
  project_id: string
  name: string
  slug: string
  color: string
  is_default: Bool
  require_approval: Bool
  position?: Num
  created_at: Num
}

export const environmentJson = (row: EnvironmentRow) => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  color: row.color,
  is_default: Boolean(row.is_default),
  require_approval: Boolean(row.require_approval),
  created_at: iso(row.created_at),
})
