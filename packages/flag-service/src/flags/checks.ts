import type { FlagType, Issue } from '@flagsync/protocol'
import { HttpError } from '@flagsync/server-kit'
import { type FlagWriter, TABLES } from '@flagsync/store'
import type { Knex } from 'knex'
import { SERVICE_TABLES } from '../tables.js'
import { segmentKeysOf, segmentScope } from './expand.js'
import { fitsType, type ServiceFlag, typeMessage, unprocessable } from './model.js'

// Checks that need the rest of the environment (or project). They run inside
// the write transaction, which holds the store's revision lock, so two
// concurrent saves cannot each pass and together form a cycle.

/** Every flag of an environment as this transaction sees it, by key. */
async function environmentFlags(trx: Knex, environmentId: string): Promise<Map<string, ServiceFlag>> {
  const rows = (await trx(TABLES.flags).where('scope', environmentId).select('key', 'data')) as Array<{
    key: string
    data: string
  }>
  return new Map(rows.map((r) => [r.key, JSON.parse(r.data) as ServiceFlag]))
}

/** The keys of a project's segments. */
async function segmentKeys(trx: Knex, projectId: string): Promise<Set<string>> {
  const rows = (await trx(TABLES.flags).where('scope', segmentScope(projectId)).select('key')) as Array<{ key: string }>
  return new Set(rows.map((r) => r.key))
}

const typeOf = (flag: ServiceFlag | undefined): FlagType => flag?.flag_type ?? 'boolean'
const prerequisitesOf = (flag: ServiceFlag | undefined) => flag?.prerequisites ?? []

/**
 * What would be wrong with saving `candidate` into an environment holding
 * `flags` (the candidate's old version, if any, is replaced), in a project
 * whose segments are `segments`:
 * - a rule referencing a segment the project does not have;
 * - a prerequisite missing from the environment, or a `required_value` that is
 *   not of the prerequisite's flag_type;
 * - a prerequisite cycle through the candidate;
 * - another flag requiring a value of the candidate that its (new) flag_type cannot serve.
 */
export function environmentIssues(
  candidate: ServiceFlag,
  flags: ReadonlyMap<string, ServiceFlag>,
  segments: Pick<ReadonlySet<string>, 'has'>,
): Issue[] {
  const issues: Issue[] = []
  candidate.rules.forEach((rule, i) => {
    if (rule.segment_key != null && !segments.has(rule.segment_key)) {
      issues.push({
        path: `rules[${i}].segment_key`,
        message: `no segment ${JSON.stringify(rule.segment_key)} in this project`,
      })
    }
  })
  const all = new Map(flags)
  all.set(candidate.key, candidate)
  candidate.prerequisites.forEach((p, i) => {
    if (p.flag_key === candidate.key) return // reported by the flag's own schema
    const target = flags.get(p.flag_key)
    if (!target) {
      issues.push({
        path: `prerequisites[${i}].flag_key`,
        message: `no flag ${JSON.stringify(p.flag_key)} in this environment`,
      })
    } else if (p.required_value !== undefined && !fitsType(typeOf(target), p.required_value)) {
      issues.push({
        path: `prerequisites[${i}].required_value`,
        message: `${typeMessage(typeOf(target))} of ${JSON.stringify(p.flag_key)}`,
      })
    }
  })
  const cycle = findCycle(candidate.key, all)
  if (cycle) issues.push({ path: 'prerequisites', message: `prerequisite cycle: ${cycle.join(' -> ')}` })
  for (const [key, other] of flags) {
    if (key === candidate.key) continue
    for (const p of prerequisitesOf(other)) {
      if (
        p.flag_key === candidate.key &&
        p.required_value !== undefined &&
        !fitsType(candidate.flag_type, p.required_value)
      ) {
        issues.push({
          path: 'flag_type',
          message: `flag ${JSON.stringify(key)} requires ${JSON.stringify(p.required_value)} of this flag, which is not a value of type ${candidate.flag_type}: change that prerequisite first`,
        })
      }
    }
  }
  return issues
}

/** A prerequisite path from `start` back to itself (`a -> b -> a`), or undefined. Other cycles are not its business. */
function findCycle(start: string, flags: ReadonlyMap<string, ServiceFlag>): string[] | undefined {
  const visited = new Set<string>([start])
  const path = [start]
  const visit = (key: string): boolean => {
    for (const p of prerequisitesOf(flags.get(key))) {
      if (p.flag_key === start) {
        path.push(start)
        return true
      }
      if (visited.has(p.flag_key)) continue
      visited.add(p.flag_key)
      path.push(p.flag_key)
      if (visit(p.flag_key)) return true
      path.pop()
    }
    return false
  }
  return visit(start) ? path : undefined
}

/**
 * Whether the environment requires approval, read with `trx`: inside a write's
 * transaction, so a write that waited for the lock while an admin switched
 * approval on follows the switch (the guards' `requireApproval` was read before).
 */
export async function requiresApproval(trx: Knex, environmentId: string): Promise<boolean> {
  const row = (await trx(SERVICE_TABLES.environments).where('id', environmentId).first('require_approval')) as
    | { require_approval: boolean | number }
    | undefined
  return Boolean(row?.require_approval)
}

const approvalByWriter = new WeakMap<FlagWriter, Map<string, Promise<boolean>>>()

/** `requiresApproval` read once per write transaction and environment: a batch's operations share one read. */
export function approvalRequired(flags: FlagWriter, environmentId: string): Promise<boolean> {
  let read = approvalByWriter.get(flags)
  if (!read) {
    read = new Map()
    approvalByWriter.set(flags, read)
  }
  let required = read.get(environmentId)
  if (!required) {
    required = requiresApproval(flags.trx, environmentId)
    read.set(environmentId, required)
  }
  return required
}

const committedByWriter = new WeakMap<FlagWriter, Map<string, Map<string, ServiceFlag>>>()

/**
 * The environment's flags with this transaction's staged writes on top: the
 * writer flushes at commit, so a sync batch's earlier operations (a
 * prerequisite inserted before the flag needing it) are not in the table yet.
 */
export async function stagedEnvironmentFlags(
  flags: FlagWriter,
  environmentId: string,
): Promise<Map<string, ServiceFlag>> {
  // The table changes only when the writer flushes at commit, so one read per transaction and environment
  // serves every operation of a batch (500 operations would otherwise read the environment 500 times).
  let read = committedByWriter.get(flags)
  if (!read) {
    read = new Map()
    committedByWriter.set(flags, read)
  }
  let committed = read.get(environmentId)
  if (!committed) {
    committed = await environmentFlags(flags.trx, environmentId)
    read.set(environmentId, committed)
  }
  const all = new Map(committed)
  for (const change of await flags.changes()) {
    if (change.scope !== environmentId) continue
    if (change.flag) all.set(change.key, change.flag as ServiceFlag)
    else all.delete(change.key)
  }
  return all
}

/** Validates `candidate` against its environment inside the write transaction; a 422 naming each problem. */
export async function assertFitsEnvironment(
  flags: FlagWriter,
  environment: { id: string; projectId: string },
  candidate: ServiceFlag,
  what = 'flag',
): Promise<void> {
  const issues = environmentIssues(
    candidate,
    await stagedEnvironmentFlags(flags, environment.id),
    candidate.rules.some((r) => r.segment_key != null)
      ? await segmentKeys(flags.trx, environment.projectId)
      : new Set(),
  )
  if (issues.length > 0) throw unprocessable(what, issues)
}

/** The flags of an environment that list `key` as a prerequisite. */
function dependentsOf(key: string, flags: ReadonlyMap<string, ServiceFlag>): string[] {
  const out: string[] = []
  for (const [k, flag] of flags) if (k !== key && prerequisitesOf(flag).some((p) => p.flag_key === key)) out.push(k)
  return out.sort()
}

/** `assertNoDependents` over a given set of the environment's flags (e.g. `stagedEnvironmentFlags`). */
export function assertNoneDepend(key: string, flags: ReadonlyMap<string, ServiceFlag>): void {
  const dependents = dependentsOf(key, flags)
  if (dependents.length > 0) {
    throw new HttpError(
      'conflict',
      `flag ${JSON.stringify(key)} is a prerequisite of ${dependents.map((d) => JSON.stringify(d)).join(', ')}: remove it from their prerequisites first`,
      { dependents },
    )
  }
}

/** Where a project's flags reference a segment: `{environment_id, flag_key}` pairs in environment and key order. */
export async function segmentUsage(
  trx: Knex,
  projectId: string,
  segmentKey: string,
): Promise<Array<{ environment_id: string; flag_key: string }>> {
  const rows = (await trx({ f: TABLES.flags })
    .join({ e: SERVICE_TABLES.environments }, 'e.id', 'f.scope')
    .where('e.project_id', projectId)
    .where('f.data', 'like', '%"segment_key"%')
    .orderBy([{ column: 'e.position' }, { column: 'f.key' }])
    .select('f.scope', 'f.key', 'f.data')) as Array<{ scope: string; key: string; data: string }>
  return rows
    .filter((r) => segmentKeysOf(JSON.parse(r.data)).has(segmentKey))
    .map((r) => ({ environment_id: r.scope, flag_key: r.key }))
}
