/**
 * Every query key of the dashboard's server state, in one place: a page that
 * reads a resource and a write that changes it name the same key, so a
 * resource is fetched once however many sections show it (a project's members
 * feed the role badge and the Members tab; the workspace's users feed the
 * Users page and the "Add member" list).
 *
 * Keys under `session`, `projects`, `users`, `tokens` and an environment's
 * `flags` are kept by the persister for an offline start (`persisted`).
 */
export const queryKeys = {
  me: () => ['session', 'me'] as const,
  workspace: () => ['session', 'workspace'] as const,
  projects: () => ['projects'] as const,
  environments: (projectId: string) => ['projects', projectId, 'environments'] as const,
  members: (projectId: string) => ['projects', projectId, 'members'] as const,
  sdkKeys: (projectId: string) => ['projects', projectId, 'sdk-keys'] as const,
  segments: (projectId: string) => ['projects', projectId, 'segments'] as const,
  /** The project's flags as its dashboard stream last sent them (SDK view): environment id → key → flag. */
  liveFlags: (projectId: string) => ['projects', projectId, 'live-flags'] as const,
  users: () => ['users'] as const,
  /** The people audit (`GET /api/users/audit`), every page of it: not persisted, it is for workspace admins online. */
  peopleAudit: () => ['people-audit'] as const,
  tokens: () => ['tokens'] as const,
  /** An environment's flags as the editor edits them (`GET /api/environments/:id/flags`, segment references kept). */
  editableFlags: (envId: string) => ['environments', envId, 'flags'] as const,
  flag: (envId: string, key: string) => ['environments', envId, 'flags', key] as const,
  /** The project's archived flags as each environment lists them (`?archived=true`): read online, not persisted. */
  archivedFlags: (projectId: string) => ['archived-flags', projectId] as const,
  changeRequests: (envIds: readonly string[], status: string) => ['change-requests', envIds, status] as const,
  history: (url: string) => ['history', url] as const,
  impressionStats: (envId: string) => ['impressions', envId, 'stats'] as const,
  impressions: (envId: string, query: Record<string, string>) => ['impressions', envId, 'list', query] as const,
  chartImpressions: (envId: string, flagKey: string) => ['impressions', envId, 'chart', flagKey] as const,
  /** What `POST /api/environments/:id/evaluate` answered for a body (a test context, maybe an unsaved flag). */
  evaluation: (envId: string, body: unknown) => ['evaluate', envId, body] as const,
  promotion: (fromId: string, targetId: string, key: string) => ['promotion', fromId, targetId, key] as const,
  /** Two environments side by side (`GET /api/projects/:id/compare`): not persisted, a promotion reads it fresh. */
  comparison: (projectId: string, fromId: string, toId: string) => ['compare', projectId, fromId, toId] as const,
  schedules: (envId: string) => ['schedules', envId] as const,
  webhooks: (projectId: string) => ['webhooks', projectId] as const,
  deliveries: (projectId: string, webhookId: string) => ['webhooks', projectId, webhookId, 'deliveries'] as const,
}

const PERSISTED_ROOTS = new Set(['session', 'projects', 'users', 'tokens', 'environments'])

/** Whether the persister keeps a query's data for an offline start: what the pages show read-only without a network. */
export function persisted(queryKey: readonly unknown[]): boolean {
  return typeof queryKey[0] === 'string' && PERSISTED_ROOTS.has(queryKey[0])
}
