/**
 * Promotion: copying flags as they are in one environment of a project into another, each a put through the one
 * write path (`writeFlagIn`: three-way check against the caller's base, approval gate, prerequisites, streams,
 * audit, webhooks). `POST …/flags/:key/promote` promotes one flag, `POST /api/projects/:id/promote` several in one
 * transaction; both call `promoteIn`, so both follow one policy: where the target requires approval, creating a
 * flag there is open to editors and promoting over an existing flag needs the project admin role (403 otherwise;
 * a promotion never files a change request).
 */

import { HttpError } from '@flagsync/server-kit'
import type { FlagWriter } from '@flagsync/store'
import type { Request } from 'express'
import type { Knex } from 'knex'
import { auditOf } from '../audit/flag-audit.js'
import type { Role } from '../auth/context.js'
import { environmentRef } from '../environments/queries.js'
import type { ServiceFlag } from './model.js'
import { type ServiceWriteResult, type WriteTarget, writeFlagIn } from './write-flag.js'

/** One flag to promote: its key, and the target's revision the caller saw (0: it had no such flag), if any. */
export interface PromotionItem {
  key: string
  base?: number
}

/** A flag's promotion as the write core answered it; `missing` when the source environment has no such flag. */
export type PromotionResult = ServiceWriteResult<never> | { status: 'missing'; key: string }

/** Source and target of a promotion, both environments of one project, with the caller's role in it. */
export interface Promotion {
  from: { id: string; name: string }
  to: WriteTarget
}

/** The two environments of a promotion, read in its transaction; an id not of the project, or the same, is a 422. */
export async function promotionOf(
  trx: Knex,
  projectId: string,
  role: Role,
  ids: { from: string; to: string },
  fields = { from: 'from_env_id', to: 'to_env_id' },
): Promise<Promotion> {
  const [from, to] = await Promise.all([
    environmentRef(trx, projectId, ids.from),
    environmentRef(trx, projectId, ids.to),
  ])
  if (!from) throw badPromotion(fields.from, 'no environment with this id in the project')
  if (!to) throw badPromotion(fields.to, 'no environment with this id in the project')
  if (from.id === to.id) throw badPromotion(fields.to, 'is the environment promoted from')
  return { from, to: { id: to.id, name: to.name, projectId, role } }
}

const badPromotion = (path: string, message: string) =>
  new HttpError('validation_failed', `invalid promotion: ${path}: ${message}`, { issues: [{ path, message }] })

/**
 * The flags copied from `from` to `to` in the caller's transaction, in an order where a flag comes after those of
 * its prerequisites promoted with it (so a flag and its prerequisite can go together). Every item is tried, so the
 * caller sees every conflict and refusal at once; it throws (rolling everything back) unless all were written.
 */
export async function promoteIn(
  flags: FlagWriter,
  promotion: Promotion,
  items: readonly PromotionItem[],
): Promise<PromotionResult[]> {
  const sources = new Map<string, ServiceFlag>()
  for (const { key } of items) {
    const source = (await flags.get(key, promotion.from.id)) as ServiceFlag | undefined
    if (source) sources.set(key, source)
  }
  const results = new Map<string, PromotionResult>()
  for (const item of prerequisitesFirst(items, sources)) {
    const source = sources.get(item.key)
    if (!source) {
      results.set(item.key, { status: 'missing', key: item.key })
      continue
    }
    const intent = { action: 'put', key: item.key, record: source, base: item.base } as const
    const written = await writeFlagIn<never>(flags, promotion.to, intent, {
      replacing: 'promoting over an existing flag',
      what: `flag in ${promotion.to.name}`,
    })
    results.set(item.key, written)
  }
  return items.map((item) => results.get(item.key) as PromotionResult)
}

/** The items in request order, except that a prerequisite promoted along comes before the flags needing it. */
function prerequisitesFirst(items: readonly PromotionItem[], sources: ReadonlyMap<string, ServiceFlag>) {
  const byKey = new Map(items.map((item) => [item.key, item]))
  const ordered: PromotionItem[] = []
  const placed = new Set<string>()
  const place = (item: PromotionItem) => {
    if (placed.has(item.key)) return
    placed.add(item.key) // before its prerequisites: a cycle in the source stops here
    for (const p of sources.get(item.key)?.prerequisites ?? []) {
      const along = byKey.get(p.flag_key)
      if (along) place(along)
    }
    ordered.push(item)
  }
  for (const item of items) place(item)
  return ordered
}

/**
 * Who and through what for a promotion's transaction: its audit entries name the environment the flags came from
 * (`promote from Staging`), read before the transaction, which reads it again.
 */
export async function promotionAuditOf(knex: Knex, req: Request, projectId: string, fromId: string) {
  const from = await environmentRef(knex, projectId, fromId)
  return auditOf(knex, req, `promote from ${from?.name ?? fromId}`)
}
