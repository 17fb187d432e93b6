import { toIssues } from '@flagsync/protocol'
import type { z } from 'zod'
import type { Collection } from './collection.js'
import { OperationRejected } from './operation-rejected.js'

export interface TableCollectionOptions<S extends z.ZodObject> {
  /** Your table; create it in your own migrations. */
  table: string
  /** Validates inserted records; `schema.partial()` validates update changes. */
  schema: S
  /** Primary-key (or unique) column holding the recordId (default 'id'). */
  idColumn?: string
}

/**
 * A collection stored in an application table, one column per schema field:
 * - insert creates the row or replaces it: the schema's columns take the
 *   record's values, and those the record leaves out get their column default;
 * - update changes only the columns named in `changes` (rejected when the row
 *   does not exist);
 * - delete removes the row (no error when it is already gone).
 * Objects and arrays are stored as JSON text.
 */
export function tableCollection<S extends z.ZodObject>(options: TableCollectionOptions<S>): Collection {
  const { table, schema } = options
  const idColumn = options.idColumn ?? 'id'
  const partial = schema.partial()
  // On conflict these take the new row's values (or their defaults when the record omits them).
  const replaced = Object.keys(schema.shape).filter((column) => column !== idColumn)

  const validate = (value: unknown, what: 'record' | 'changes', zodSchema: z.ZodType): Record<string, unknown> => {
    const parsed = zodSchema.safeParse(value)
    if (!parsed.success) throw new OperationRejected(`invalid ${what}`, toIssues(parsed.error, [what]))
    return parsed.data as Record<string, unknown>
  }

  return {
    async insert({ trx }, recordId, record) {
      if (record[idColumn] !== undefined && record[idColumn] !== recordId) {
        throw new OperationRejected(`record.${idColumn} must equal recordId`, [
          { path: `record.${idColumn}`, message: `expected ${JSON.stringify(recordId)} (the recordId)` },
        ])
      }
      const row = toRow(validate({ ...record, [idColumn]: recordId }, 'record', schema))
      const insert = trx(table).insert(row).onConflict(idColumn)
      await (replaced.length > 0 ? insert.merge(replaced) : insert.ignore())
    },

    async update({ trx }, recordId, changes) {
      if (changes[idColumn] !== undefined && changes[idColumn] !== recordId) {
        throw new OperationRejected(`changes.${idColumn} cannot change`, [
          { path: `changes.${idColumn}`, message: `the ${idColumn} cannot change (is ${JSON.stringify(recordId)})` },
        ])
      }
      const parsed = validate(changes, 'changes', partial)
      // zod fills in defaults even for fields a partial schema leaves out:
      // only the fields the sender named may change.
      const named: Record<string, unknown> = {}
      for (const [key, value] of Object.entries(parsed)) {
        if (key !== idColumn && Object.hasOwn(changes, key)) named[key] = value
      }
      const exists = await trx(table).where(idColumn, recordId).first(idColumn)
      if (!exists) {
        throw new OperationRejected(`${table} ${JSON.stringify(recordId)} does not exist`, [
          { path: 'recordId', message: `no ${table} row with this ${idColumn}; insert it first` },
        ])
      }
      const row = toRow(named)
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
    row[key] = value !== null && typeof value === 'object' && !(value instanceof Date) ? JSON.stringify(value) : value
  }
  return row
}
