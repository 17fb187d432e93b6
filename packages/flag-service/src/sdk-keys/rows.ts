import type { SdkKeyKind } from '../auth/secrets.js'
import { iso, type Num } from '../records.js'

export interface SdkKeyRow {
  id: Num
  project_id: string
  environment_id: string
  environment_name: string
  name: string
  kind: SdkKeyKind
  prefix: string
  created_at: Num
}

export const sdkKeyJson = (row: SdkKeyRow) => ({
  id: Number(row.id),
  name: row.name,
  kind: row.kind,
  prefix: row.prefix,
  environment_id: row.environment_id,
  environment_name: row.environment_name,
  created_at: iso(row.created_at),
})
