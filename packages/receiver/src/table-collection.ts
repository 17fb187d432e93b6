import { toIssues } from '@flagsync/protocol'
import type { Knex } from 'knex'
import type { z } from 'zod'
import type { Collection, OperationMeta } from './collection.js'
import { OperationConflict } from './operation-conflict.js'
import { OperationRejected } from './operation-rejected.js'

export interface TableCollectionOptions<S extends z.ZodObject> {
  /** Your table; create it in your own migrations. */
  table: string
  /** Validates inserted records; `schema.partial()` validates update changes. */
  schema: S
  /** Primary-key (or unique) column holding the recordId (default 'id'). */
  idColumn?: string
  /**
   * An integer column holding the row's version. When set, every write
   * through the receiver sets it to the row's previous version + 1 (1 for a
   * new row), and an operation with a `baseRevision` is checked record-level:
   * a row whose version is above the base is a conflict (409), as is an
   * update or delete of a row that is gone. Without it, `baseRevision` is
   * ignored (last writer wins). Not part of `schema`.
   */
  revisionColumn?: string
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
  const spec = tableSpec(options)
  return {
    insert: ({ trx }, recordId, record, meta) => insertRow(spec, trx, recordId, record, meta),
    update: ({ trx }, recordId, changes, meta) => updateRow(spec, trx, recordId, changes, meta),
    delete: async ({ trx }, recordId, meta) => {
      await versionOf(spec, trx, recordId, 'delete', null, meta)
      await trx(spec.table).where(spec.idColumn, recordId).delete()
    },
  }
}

/** The options resolved once for every operation of the collection. */
interface TableSpec {
  table: string
  schema: z.ZodObject
  partial: z.ZodType
  idColumn: string
  revisionColumn: string | undefined
  /** On conflict these take the new row's values (or their defaults when the record omits them). */
  replaced: string[]
  /** The fields a record or changes may name. */
  known: Set<string>
}

function tableSpec<S extends z.ZodObject>(options: TableCollectionOptions<S>): TableSpec {
  const { table, schema } = options
  const idColumn = options.idColumn ?? 'id'
  const revisionColumn = options.revisionColumn
  return {
    table,
    schema,
    partial: schema.partial(),
    idColumn,
    revisionColumn,
    replaced: Object.keys(schema.shape).filter((column) => column !== idColumn),
    known: new Set([...Object.keys(schema.shape), idColumn, ...(revisionColumn ? [revisionColumn] : [])]),
  }
}

// Every field must be a column of the schema (or the version column, read-only), whatever the schema's own mode:
// a plain z.object would strip `titel` and answer applied, and the typo's value would be lost without a word.
function validate(
  { known, table }: TableSpec,
  value: Record<string, unknown>,
  what: 'record' | 'changes',
  zodSchema: z.ZodType,
): Record<string, unknown> {
  const unknown = Object.keys(value).filter((key) => !known.has(key))
  if (unknown.length > 0) {
    throw new OperationRejected(
      `invalid ${what}: unknown field${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`,
      unknown.map((key) => ({
        path: `${what}.${key}`,
        message: `not a column of ${table} (the collection's schema)`,
      })),
    )
  }
  const parsed = zodSchema.safeParse(value)
  if (!parsed.success) throw new OperationRejected(`invalid ${what}`, toIssues(parsed.error, [what]))
  return parsed.data as Record<string, unknown>
}

/** The row's version, and a record-level conflict check when the operation has a base. */
async function versionOf(
  { table, idColumn, revisionColumn }: TableSpec,
  trx: Knex.Transaction,
  recordId: string,
  action: 'insert' | 'update' | 'delete',
  sets: Record<string, unknown> | null,
  meta: OperationMeta,
): Promise<number | undefined> {
  if (!revisionColumn) return undefined
  const row = (await trx(table).where(idColumn, recordId).first()) as Record<string, unknown> | undefined
  const version = row ? Number(row[revisionColumn] ?? 0) : undefined
  const base = meta.baseRevision
  if (base === undefined) return version
  const fields = Object.keys(sets ?? {}).filter((f) => f !== idColumn)
  const common = { base: null, current: row ?? null, currentRevision: version ?? null }
  if (version === undefined) {
    if (action === 'insert') return version
    throw new OperationConflict({
      ...common,
      kind: 'deleted',
      fields: action === 'update' ? fields : [],
      reason: `the ${table} row is gone; it was deleted after revision ${base} or never existed (record-level check)`,
    })
  }
  if (version <= base) return version
  throw new OperationConflict({
    ...common,
    kind: action === 'insert' ? 'exists' : 'field',
    fields,
    reason: `the ${table} row is at revision ${version}, written after revision ${base} (record-level check: the table keeps no field history)`,
  })
}

const withVersion = (
  { revisionColumn }: TableSpec,
  row: Record<string, unknown>,
  version: number | undefined,
): Record<string, unknown> => (revisionColumn ? { ...row, [revisionColumn]: (version ?? 0) + 1 } : row)

async function insertRow(
  spec: TableSpec,
  trx: Knex.Transaction,
  recordId: string,
  record: Record<string, unknown>,
  meta: OperationMeta,
): Promise<void> {
  const { table, idColumn, revisionColumn, replaced } = spec
  if (record[idColumn] !== undefined && record[idColumn] !== recordId) {
    throw new OperationRejected(`record.${idColumn} must equal recordId`, [
      { path: `record.${idColumn}`, message: `expected ${JSON.stringify(recordId)} (the recordId)` },
    ])
  }
  const validated = validate(spec, { ...record, [idColumn]: recordId }, 'record', spec.schema)
  const version = await versionOf(spec, trx, recordId, 'insert', validated, meta)
  const row = withVersion(spec, toRow(validated), version)
  const insert = trx(table).insert(row).onConflict(idColumn)
  const merged = revisionColumn ? [...replaced, revisionColumn] : replaced
  await (merged.length > 0 ? insert.merge(merged) : insert.ignore())
}

async function updateRow(
  spec: TableSpec,
  trx: Knex.Transaction,
  recordId: string,
  changes: Record<string, unknown>,
  meta: OperationMeta,
): Promise<void> {
  const { table, idColumn, revisionColumn } = spec
  if (changes[idColumn] !== undefined && changes[idColumn] !== recordId) {
    throw new OperationRejected(`changes.${idColumn} cannot change`, [
      { path: `changes.${idColumn}`, message: `the ${idColumn} cannot change (is ${JSON.stringify(recordId)})` },
    ])
  }
  const parsed = validate(spec, changes, 'changes', spec.partial)
  // zod fills in defaults even for fields a partial schema leaves out:
  // only the fields the sender named may change.
  const named: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(parsed)) {
    if (key !== idColumn && Object.hasOwn(changes, key)) named[key] = value
  }
  const version = await versionOf(spec, trx, recordId, 'update', named, meta)
  const exists = revisionColumn ? version !== undefined : await trx(table).where(idColumn, recordId).first(idColumn)
  if (!exists) {
    throw new OperationRejected(`${table} ${JSON.stringify(recordId)} does not exist`, [
      { path: 'recordId', message: `no ${table} row with this ${idColumn}; insert it first` },
    ])
  }
  const row = toRow(named)
  if (Object.keys(row).length > 0)
    await trx(table)
      .where(idColumn, recordId)
      .update(withVersion(spec, row, version))
}

function toRow(data: Record<string, unknown>): Record<string, unknown> {
  const row: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(data)) {
    row[key] = value !== null && typeof value === 'object' && !(value instanceof Date) ? JSON.stringify(value) : value
  }
  return row
}
