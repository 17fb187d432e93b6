export type { ServiceAppOptions } from './app.js'
export { createServiceApp } from './app.js'
export { authenticate, CSRF_HEADER, isStateChange } from './auth/authenticate.js'
export type {
  AuthContext,
  AuthUser,
  EnvironmentAccess,
  ProjectAccess,
  Role,
  TokenScope,
} from './auth/context.js'
export { ROLES, roleAtLeast, TOKEN_SCOPES } from './auth/context.js'
export {
  authOf,
  environmentOf,
  loadEnvironment,
  loadProject,
  projectOf,
  projectRole,
  requireAuth,
  requireProjectRole,
  requireUser,
  requireWorkspaceAdmin,
  requireWritable,
  userOf,
} from './auth/guards.js'
export type { LockoutPolicy, LockoutState } from './auth/lockout.js'
export { LOCKOUT_POLICY, lockoutHorizonMs, lockoutState } from './auth/lockout.js'
export { hashPassword, verifyPassword } from './auth/passwords.js'
export { displayPrefix, generateSecret, hashesEqual, hashSecret, PAT_PREFIX, SDK_KEY_PREFIX } from './auth/secrets.js'
export { SESSION_COOKIE, SESSION_TTL_MS } from './auth/sessions.js'
export type { ServiceConfig, SetupConfig } from './config.js'
export {
  ConfigError,
  DEFAULT_SERVICE_DATABASE_URL,
  DEFAULT_SERVICE_PORT,
  loadServiceConfig,
  SETUP_VARIABLES,
} from './config.js'
export { serviceMigrations } from './core-migrations.js'
export { dashboardRoute, installedDashboardDir, resolveDashboardDir } from './dashboard-route.js'
export type { FeatureMountContext, FlagStreamOptions, Segment, SegmentRule, ServiceFlag } from './flags/index.js'
export { CHANGE_REQUESTS_TABLE, FlagStreams, flagStreamsOf, sweepOrphanSegments } from './flags/index.js'
export type { ImpressionRetention } from './impressions/index.js'
export {
  IMPRESSION_INDEXES,
  IMPRESSION_TABLES,
  ImpressionWriter,
  listImpressions,
  pruneImpressions,
  startImpressionRetention,
} from './impressions/index.js'
export { migrateService } from './migrations.js'
export { openServiceRuntime } from './open-service-runtime.js'
export { SEED_ENVIRONMENTS } from './projects.js'
export type { FlagServiceServer, FlagServiceServerExtras } from './server.js'
export { startFlagServiceServer } from './server.js'
export type { FlagChangeListener, ServiceRuntime, ServiceRuntimeOptions } from './service-runtime.js'
export type { SetupResult } from './setup.js'
export { ensureWorkspace } from './setup.js'
export { slugify } from './slug.js'
export type { ServiceMigration } from './tables.js'
export { SERVICE_MIGRATIONS_TABLE, SERVICE_TABLES } from './tables.js'
