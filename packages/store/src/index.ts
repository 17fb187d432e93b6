export { jsonEqual } from '@flagsync/protocol'
export type { AuditEntry, AuditFilter, AuditPage, AuditQuery } from './audit-log.js'
export { AuditLog } from './audit-log.js'
export { auditEntryToWire, auditPageToWire } from './audit-wire.js'
export type { BaseStates, RevisionPair } from './base-states.js'
export { BaseStatesNeeded } from './base-states.js'
export type { ChangeFeedOptions, ChangeListener, MissedChangesOptions, ResetListener } from './change-feed.js'
export { ChangeFeed, readMissedChanges } from './change-feed.js'
export type { DatabaseDriver, DriverResolver } from './database-driver.js'
export { DriverMissingError } from './database-driver.js'
export type { DatabaseConfig } from './database-url.js'
export { DEFAULT_DATABASE_URL, parseDatabaseUrl } from './database-url.js'
export type { FlagStoreOptions, WriteOptions, WriteResult } from './flag-store.js'
export { FlagStore } from './flag-store.js'
export type { FlagConflict } from './flag-write/check-base.js'
export { singleFlagConflict } from './flag-write/check-base.js'
export type { ConflictCheck, ConflictKind, ConflictVerdict } from './flag-write/detect-conflict.js'
export { detectConflict } from './flag-write/detect-conflict.js'
export type { Shaped } from './flag-write/shape-write.js'
export { patchedFields, shapeWrite } from './flag-write/shape-write.js'
export { writeFlagChange } from './flag-write/write-flag-change.js'
export type {
  Checked,
  FlagChangeKind,
  FlagModel,
  FlagWriteIntent,
  FlagWriteResult,
  FlagWriteRules,
  Gate,
  Invalid,
} from './flag-write/write-types.js'
export type { CommittedFlag, StagedChange } from './flag-writer.js'
export { FlagWriter, MAX_STEPS_UNDER_LOCK } from './flag-writer.js'
export type { LiveEntry, LiveFlagSetOptions, SerializedList } from './live-flag-set.js'
export { LiveFlagSet, withRevision } from './live-flag-set.js'
export { META, TABLES } from './migrations.js'
export type { Database, OpenDatabaseOptions } from './open-database.js'
export { openDatabase } from './open-database.js'
export type { MigrationRun } from './run-migrations.js'
export { runMigrations } from './run-migrations.js'
export type { StoreErrorCode } from './store-error.js'
export { isDatabaseFailure, StoreError, toStoreError } from './store-error.js'
export type { AuditContext, FlagChange, StateAt, StoredFlag, StoredFlagRow } from './types.js'
