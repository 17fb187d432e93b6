import { useState } from 'react'
import { api } from './api.js'
import { ConfirmDialog, FormDialog } from './dialog.js'
import { ErrorLine } from './error-line.js'
import { FlagsPanel } from './flags-panel.js'
import {
  ChangeRequests,
  Compare,
  Environments,
  ImpressionsPanel,
  Members,
  ProjectHistory,
  SdkKeys,
  TestUser,
  Webhooks,
} from './lazy-pages.js'
import type { LiveFlags } from './live-flags.js'
import { PageBoundary } from './page-boundary.js'
import { useProjectData, useProjectStream } from './project-data.js'
import { queryKeys } from './query-keys.js'
import { navigate, projectPath } from './route.js'
import { Schedules } from './schedules.js'
import type { Environment, Me, Member, Project, Role } from './types.js'
import { useServiceWrite } from './use-projects.js'

const TABS = [
  ['flags', 'Flags'],
  ['test', 'Test a user'],
  ['environments', 'Environments'],
  ['compare', 'Compare'],
  ['requests', 'Change requests'],
  ['schedules', 'Schedules'],
  ['keys', 'SDK keys'],
  ['members', 'Members'],
  ['impressions', 'Impressions'],
  ['history', 'History'],
  ['webhooks', 'Webhooks'],
] as const

/**
 * The caller's effective role in a project (README, Roles): workspace admins
 * are admin everywhere, workspace viewers are viewers wherever they are
 * members, editors act with their project role.
 */
function effectiveRole(me: Me, members: readonly Member[]): Role | null {
  if (me.role === 'admin') return 'admin'
  const member = members.find((m) => m.user_id === me.id)
  if (!member) return null
  return me.role === 'viewer' ? 'viewer' : member.role
}

interface ProjectPageProps {
  me: Me
  project: Project
  tab: string
  offline: boolean
}

/** What the sections of a project page get: the caller's role there, and why admin controls may be off. */
interface ProjectAccess {
  role: Role
  isProjectAdmin: boolean
  adminReason: string
}

export function ProjectPage(props: ProjectPageProps) {
  const { project } = props
  const data = useProjectData(project.id)
  const live = useProjectStream(project.id, props.offline, data)
  const [dialog, setDialog] = useState<'rename' | 'delete' | null>(null)
  const role = effectiveRole(props.me, data.members) ?? (props.me.role === 'admin' ? 'admin' : 'viewer')
  const access: ProjectAccess = {
    role,
    isProjectAdmin: role === 'admin' && !props.offline,
    adminReason: props.offline ? 'needs the service (offline)' : 'needs the project admin role',
  }
  return (
    <section aria-labelledby="project-title">
      <ProjectHead page={props} access={access} onDialog={setDialog} />
      <ErrorLine errors={[props.offline ? null : data.error]} />
      <ProjectTabs projectId={project.id} tab={props.tab} />
      <div role="tabpanel" id={`panel-${props.tab}`} aria-labelledby={`tab-${props.tab}`}>
        <PageBoundary key={props.tab}>
          <ProjectSection page={props} access={access} environments={data.environments} live={live} />
        </PageBoundary>
      </div>
      {dialog === 'rename' ? <RenameProject project={project} onClose={() => setDialog(null)} /> : null}
      {dialog === 'delete' ? (
        <DeleteProject project={project} environments={data.environments} onClose={() => setDialog(null)} />
      ) : null}
    </section>
  )
}

function ProjectHead(props: {
  page: ProjectPageProps
  access: ProjectAccess
  onDialog: (d: 'rename' | 'delete') => void
}) {
  const { page, access } = props
  const { project } = page
  const workspaceAdmin = page.me.role === 'admin'
  return (
    <div className="project-head">
      <h1 id="project-title">{project.name}</h1>
      <span className="slug">{project.slug}</span>
      <span className="role-badge">your role: {access.role}</span>
      <div className="spacer" />
      <button
        type="button"
        disabled={!access.isProjectAdmin}
        title={access.isProjectAdmin ? undefined : access.adminReason}
        onClick={() => props.onDialog('rename')}
      >
        Rename
      </button>
      <button
        type="button"
        className="danger"
        disabled={!workspaceAdmin || page.offline}
        title={!workspaceAdmin ? 'needs the workspace admin role' : page.offline ? access.adminReason : undefined}
        onClick={() => props.onDialog('delete')}
      >
        Delete project
      </button>
    </div>
  )
}

function ProjectTabs(props: { projectId: string; tab: string }) {
  return (
    <div role="tablist" aria-label="Project sections" className="tabs">
      {TABS.map(([id, label]) => (
        <button
          key={id}
          type="button"
          role="tab"
          id={`tab-${id}`}
          aria-selected={props.tab === id}
          aria-controls={`panel-${id}`}
          onClick={() => navigate(projectPath(props.projectId, id))}
        >
          {label}
        </button>
      ))}
    </div>
  )
}

/** The open tab's section; flags when the tab names none of the others. */
function ProjectSection(props: {
  page: ProjectPageProps
  access: ProjectAccess
  environments: Environment[]
  live: LiveFlags
}) {
  const { page, access, environments } = props
  const { project } = page
  const admin = { canAdmin: access.isProjectAdmin, reason: access.adminReason }
  switch (page.tab) {
    case 'compare':
      return <Compare projectId={project.id} environments={environments} role={access.role} offline={page.offline} />
    case 'environments':
      return <Environments projectId={project.id} environments={environments} {...admin} />
    case 'requests':
      return <ChangeRequests me={page.me} role={access.role} environments={environments} offline={page.offline} />
    case 'schedules':
      return <Schedules me={page.me} role={access.role} environments={environments} offline={page.offline} />
    case 'keys':
      return <SdkKeys projectId={project.id} environments={environments} {...admin} />
    case 'history':
      return <ProjectHistory project={project} environments={environments} live={props.live} />
    case 'impressions':
      return <ImpressionsPanel environments={environments} />
    case 'members':
      return <Members projectId={project.id} {...admin} />
    case 'webhooks':
      return <Webhooks projectId={project.id} {...admin} />
    case 'test':
      return <TestUser environments={environments} live={props.live} offline={page.offline} />
    default:
      return (
        <FlagsPanel
          project={project}
          environments={environments}
          role={access.role}
          offline={page.offline}
          actor={page.me.email}
          live={props.live}
        />
      )
  }
}

function DeleteProject(props: { project: Project; environments: Environment[]; onClose: () => void }) {
  const { project, environments } = props
  const remove = useServiceWrite(() => api('DELETE', `/api/projects/${project.id}`), [queryKeys.projects()])
  return (
    <ConfirmDialog
      title={`Delete project ${project.name}?`}
      confirm={`Delete ${project.name}`}
      onClose={props.onClose}
      onConfirm={async () => {
        await remove.mutateAsync(undefined)
        props.onClose()
        navigate('/')
      }}
    >
      <p>
        This deletes <strong>{project.name}</strong> and everything in it, for good:
      </p>
      <ul>
        <li>
          its {environments.length} environment{environments.length === 1 ? '' : 's'} (
          {environments.map((e) => e.name).join(', ')}) and every flag in them,
        </li>
        <li>its SDK keys: apps using them stop getting flags,</li>
        <li>its members, segments, change requests and impressions.</li>
      </ul>
    </ConfirmDialog>
  )
}

function RenameProject(props: { project: Project; onClose: () => void }) {
  const [name, setName] = useState(props.project.name)
  const rename = useServiceWrite(
    (body: { name: string }) => api('PATCH', `/api/projects/${props.project.id}`, body),
    [queryKeys.projects()],
  )
  return (
    <FormDialog
      title={`Rename ${props.project.name}`}
      submit="Rename"
      onClose={props.onClose}
      onSubmit={async () => {
        await rename.mutateAsync({ name })
        props.onClose()
      }}
    >
      <label>
        Name
        <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <p className="hint">The slug is derived from the name again.</p>
    </FormDialog>
  )
}
