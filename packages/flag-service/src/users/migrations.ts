import { SERVICE_TABLES, type ServiceMigration } from '../tables.js'

/** The people audit log: one row per role, name or password change, written in the change's transaction. */
export const peopleMigrations: ServiceMigration[] = [
  {
    name: '0400_people_audit',
    async up(knex) {
      await knex.schema.createTable(SERVICE_TABLES.peopleAudit, (t) => {
        t.increments('id').primary()
        t.bigInteger('at').notNullable()
        // The acting user's id: kept (no foreign key) when that user is deleted later.
        t.integer('actor').notNullable()
        t.string('action', 32).notNullable()
        t.integer('target_user_id').notNullable().index()
        t.text('details').notNullable() // JSON
      })
    },
  },
]
