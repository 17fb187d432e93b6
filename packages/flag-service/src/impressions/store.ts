// The impression store, one function per query, shared by the routes, the retention job and the
// benchmark. A batch is one transaction of a few multi-row statements; every read is a short index range scan in
// id order or a lookup of an interned row, whatever the number of stored impressions. Where each part lives:
// ingest.ts (the write path) with plan.ts (planning and grouping) and intern.ts (interned ids); the dialects'
// statements in sql-sqlite.ts and sql-postgres.ts; list.ts and stats.ts (reads); prune.ts (retention).

export { ingestImpressions } from './ingest.js'
export { listImpressions } from './list.js'

export { pruneImpressions } from './prune.js'
export { impressionStats } from './stats.js'
export type { IngestBatch } from './types.js'
