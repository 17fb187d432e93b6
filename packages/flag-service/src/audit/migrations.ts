import { CHANGE_REQUESTS_TABLE } from '../change-requests/tables.js'
import { SCHEDULES_TABLE } from '../schedules/tables.js'
import type { ServiceMigration } from '../tables.js'

/**
 * The change routes' `?actor=` reads the requests a person filed and the schedules they approved (see
 * `personWhere`): one index seek each, however many requests and schedules the workspace keeps.
 */
export const auditMigrations: ServiceMigration[] = [
  {
    name: '0500_change_history_people',
    async up(knex) {
      await knex.schema.alterTable(CHANGE_REQUESTS_TABLE, (t) => {
        t.index(['requested_by'], 'flagsync_change_requests_requested_by')
      })
      await knex.schema.alterTable(SCHEDULES_TABLE, (t) => {
        t.index(['approved_by'], 'flagsync_schedules_approved_by')
      })
    },
  },
]
