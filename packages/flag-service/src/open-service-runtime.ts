import { openDatabase } from '@flagsync/store'
import { migrateService } from './migrations.js'
import { createServiceRuntime, type ServiceRuntime, type ServiceRuntimeOptions } from './service-runtime.js'

/** Opens the database, brings the flag store's and then the service's tables up to date, and builds the runtime. */
export async function openServiceRuntime(options: ServiceRuntimeOptions): Promise<ServiceRuntime> {
  const db = await openDatabase(options.databaseUrl, { poolMax: options.poolMax, busyTimeoutMs: options.busyTimeoutMs })
  try {
    await migrateService(db)
  } catch (error) {
    await db.close()
    throw error
  }
  return createServiceRuntime(db, options)
}
