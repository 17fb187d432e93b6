import { toIssues } from '@flagsync/protocol'
import type { z } from 'zod'
import type { Collection } from './collection.js'
import { OperationRejected } from './operation-rejected.js'

export interface TableCollectionOptions<S extends z.ZodObject> {
  /** Your table; create it in your own migrations. */
  table: string
  /** Validates inserted records; `schema.partial()` validates update changes. */
  schema: S
  /** Primary-key column holding the recordId (default 'id'). */
  idColumn?: string
}

/**
 * A collection stored in an application table: insert upserts a row, update
 * changes columns of an existing row (rejected when it does not exist),
 * delete removes it. Objects and arrays are stored as JSON text.
 */
export function tableCollection<S extends z.ZodObject>(options: TableCollectionOptions<S>): Collection {
  const { table, schema } = options
  const idColumn = options.idColumn ?? 'id'
  const partial = schema.partial()

  const validate = (value: unknown, what: 'record' | 'changes', zodSchema: z.ZodType): Record<string, unknown> => {
    const parsed = zodSchema.safeParse(value)
    if (!parsed.success) throw new OperationRejected(`invalid ${what}`, toIssues(parsed.error, [what]))
    return toRow(parsed.data as Record<string, unknown>)
  }

  return {
    async insert({ trx }, recordId, record) {
      if (record[idColumn] !== undefined && record[idColumn] !== recordId) {
        throw new OperationRejected(`record.${idColumn} must equal recordId`)
      }
      const row = validate({ ...record, [idColumn]: recordId }, 'record', schema)
      await trx(table).insert(row).onConflict(idColumn).merge()
    },
    async update({ trx }, recordId, changes) {
      if (changes[idColumn] !== undefined && changes[idColumn] !== recordId) {
        throw new OperationRejected(`changes.${idColumn} cannot change`)
      }
      const row = validate(changes, 'changes', partial)
      delete row[idColumn]
      const exists = await trx(table).where(idColumn, recordId).first(idColumn)
      if (!exists) throw new OperationRejected(`${table} ${JSON.stringify(recordId)} does not exist`)
      if (Object.keys(row).length > 0) await trx(table).where(idColumn, recordId).update(row)
    },
    async delete({ trx }, recordId) {
      await trx(table).where(idColumn, recordId).delete()
    },
  }
}

function toRow(data: Record<string, unknown>): Record<string, unknown> {
  const row: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(data)) {
    row[key] = value !== null && typeof value === 'object' ? JSON.stringify(value) : value
  }
  return row
}
