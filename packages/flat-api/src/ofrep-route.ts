import type { EvaluableFlag } from '@flagsync/protocol'
import { createOfrepRouter } from '@flagsync/server-kit'
import type { RequestHandler, Router } from 'express'
import type { FlagRuntime } from './flag-runtime.js'

/**
 * OFREP on the flat API (`/ofrep/v1`): one scope, the whole flag set, behind
 * `auth` (the app's key check; `X-API-Key` stands for `Authorization: Bearer`).
 * The shared router evaluates; this adapter hands it the live flags and the change feed.
 */
export function ofrepRoute(runtime: FlagRuntime, auth: RequestHandler): Router {
  let cached: { revision: number; flags: EvaluableFlag[] } | undefined
  const flags = (): EvaluableFlag[] => {
    const revision = runtime.live.revision
    if (cached?.revision !== revision) {
      // Each flag with its revision, for the answer's metadata; rebuilt once per change, not per request.
      const list = runtime.live.list('').map((e) => ({ ...e.flag, revision: e.revision }) as unknown as EvaluableFlag)
      cached = { revision, flags: list }
    }
    return cached.flags
  }
  return createOfrepRouter({
    name: 'flagsync flat API',
    auth,
    resolveScope: async () => ({ id: '', flags: flags(), revision: runtime.live.revision }),
    watch: (onChange) => {
      const stopChanges = runtime.feed.onChanges((changes) => {
        const mine = changes.filter((c) => c.scope === '')
        const last = mine.at(-1)
        if (last) onChange([''], last.revision)
      })
      const stopReset = runtime.feed.onReset(() => onChange('*', runtime.live.revision))
      return () => {
        stopChanges()
        stopReset()
      }
    },
    catchUp: () => runtime.feed.catchUp(),
  })
}
