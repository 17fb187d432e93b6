import { lazy } from 'react'

// The pages other than a project's flags: each is a chunk of its own, fetched when first opened (the service
// worker precaches every chunk, so they open offline too). The flags page stays in the entry chunk: it is the
// page a project opens on, and what a reload from the persisted cache must show first. Schedules is not here:
// the flag editor, part of the flags page, schedules a change with its form.
export const Tokens = lazy(() => import('./tokens.js').then((m) => ({ default: m.Tokens })))
export const Users = lazy(() => import('./users.js').then((m) => ({ default: m.Users })))
export const Account = lazy(() => import('./account.js').then((m) => ({ default: m.Account })))
export const Compare = lazy(() => import('./compare.js').then((m) => ({ default: m.Compare })))
export const Environments = lazy(() => import('./environments.js').then((m) => ({ default: m.Environments })))
export const ChangeRequests = lazy(() => import('./change-requests.js').then((m) => ({ default: m.ChangeRequests })))
export const SdkKeys = lazy(() => import('./access.js').then((m) => ({ default: m.SdkKeys })))
export const Members = lazy(() => import('./access.js').then((m) => ({ default: m.Members })))
export const ProjectHistory = lazy(() => import('./history-filters.js').then((m) => ({ default: m.ProjectHistory })))
export const ImpressionsPanel = lazy(() =>
  import('./impressions-panel.js').then((m) => ({ default: m.ImpressionsPanel })),
)
export const Webhooks = lazy(() => import('./webhooks.js').then((m) => ({ default: m.Webhooks })))
export const TestUser = lazy(() => import('./test-user.js').then((m) => ({ default: m.TestUser })))
