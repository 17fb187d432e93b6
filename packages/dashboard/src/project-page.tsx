import { useCallback, useEffect, useMemo, useState } from 'react'
import { Members, SdkKeys } from './access.js'
import { ApiError, api, errorText } from './api.js'
import { ChangeRequests } from './change-requests.js'
import { ConfirmDialog, FormDialog } from './dialog.js'
import { inOrder } from './environment-order.js'
import { Environments } from './environments.js'
import { FlagsPanel } from './flags-panel.js'
import { History } from './history.js'
import { ImpressionsPanel } from './impressions-panel.js'
import { LiveFlags } from './live-flags.js'
import { navigate, projectPath } from './route.js'
import type { Environment, Me, Member, Project, Role } from './types.js'

const TABS = [
  ['flags', 'Flags'],
  ['environments', 'Environments'],
  ['requests', 'Change requests'],
  ['keys', 'SDK keys'],
  ['members', 'Members'],
  ['impressions', 'Impressions'],
  ['history', 'History'],
] as const

/**
 * The caller's effective role in a project (README, Roles): workspace admins
 * are admin everywhere, workspace viewers are viewers wherever they are
 * members, editors act with their project role.
 */
export function effectiveRole(me: Me, members: readonly Member[]): Role | null {
  if (me.role === 'admin') return 'admin'
  const member = members.find((m) => m.user_id === me.id)
  if (!member) return null
  return me.role === 'viewer' ? 'viewer' : member.role
}

export function ProjectPage(props: {
  me: Me
  project: Project
  tab: string
  offline: boolean
  onProjectsChanged: () => Promise<void>
}) {
  const { project } = props
  const cacheKey = `flagsync.dashboard.envs.${project.id}`
  const [environments, setEnvironments] = useState<Environment[]>(() => {
    try {
      return JSON.parse(localStorage.getItem(cacheKey) ?? '[]') as Environment[]
    } catch {
      return []
    }
  })
  const membersKey = `flagsync.dashboard.members.${project.id}`
  const [members, setMembers] = useState<Member[]>(() => {
    try {
      return JSON.parse(localStorage.getItem(membersKey) ?? '[]') as Member[]
    } catch {
      return []
    }
  })
  const [dialog, setDialog] = useState<'rename' | 'delete' | null>(null)
  const [error, setError] = useState<string | null>(null)

  const reload = useCallback(async () => {
    try {
      const [envs, mems] = await Promise.all([
        api<Environment[]>('GET', `/api/projects/${project.id}/environments`),
        api<Member[]>('GET', `/api/projects/${project.id}/members`),
      ])
      localStorage.setItem(cacheKey, JSON.stringify(envs))
      localStorage.setItem(membersKey, JSON.stringify(mems))
      setEnvironments(envs)
      setMembers(mems)
    } catch (e) {
      if (!(e instanceof ApiError && e.offline)) setError(errorText(e))
    }
  }, [project.id, cacheKey, membersKey])
  useEffect(() => {
    void reload()
  }, [reload])
  // One stream per project page, keyed by the set of environments: a reorder must not reconnect it (and bootstrap
  // every flag again), a created or deleted environment must.
  const environmentSet = useMemo(() => environments.map((e) => e.id).sort(), [environments])
  const setKey = environmentSet.join(',')
  // biome-ignore lint/correctness/useExhaustiveDependencies: setKey stands for environmentSet's contents
  const live = useMemo(
    () => new LiveFlags(environmentSet, `flagsync.dashboard.flags.${project.id}`),
    [setKey, project.id],
  )
  useEffect(() => {
    live.start()
    return () => live.stop()
  }, [live])
  // Someone (another tab, another person) reordered the environments: follow at once, then re-read them.
  useEffect(() => {
    if (props.offline) return
    return live.onEnvironmentOrder(project.id, (ids) => {
      setEnvironments((envs) => inOrder(envs, ids))
      void reload()
    })
  }, [live, project.id, props.offline, reload])

  const role = effectiveRole(props.me, members) ?? (props.me.role === 'admin' ? 'admin' : 'viewer')
  const isProjectAdmin = role === 'admin' && !props.offline
  const adminReason = props.offline ? 'needs the service (offline)' : 'needs the project admin role'

  return (
    <section aria-labelledby="project-title">
      <div className="project-head">
        <h1 id="project-title">{project.name}</h1>
        <span className="slug">{project.slug}</span>
        <span className="role-badge">your role: {role}</span>
        <div className="spacer" />
        <button
          type="button"
          disabled={!isProjectAdmin}
          title={isProjectAdmin ? undefined : adminReason}
          onClick={() => setDialog('rename')}
        >
          Rename
        </button>
        <button
          type="button"
          className="danger"
          disabled={props.me.role !== 'admin' || props.offline}
          title={props.me.role !== 'admin' ? 'needs the workspace admin role' : props.offline ? adminReason : undefined}
          onClick={() => setDialog('delete')}
        >
          Delete project
        </button>
      </div>
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
      <div role="tablist" aria-label="Project sections" className="tabs">
        {TABS.map(([id, label]) => (
          <button
            key={id}
            type="button"
            role="tab"
            id={`tab-${id}`}
            aria-selected={props.tab === id}
            aria-controls={`panel-${id}`}
            onClick={() => navigate(projectPath(project.id, id))}
          >
            {label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`panel-${props.tab}`} aria-labelledby={`tab-${props.tab}`}>
        {props.tab === 'environments' ? (
          <Environments
            projectId={project.id}
            environments={environments}
            canAdmin={isProjectAdmin}
            reason={adminReason}
            onChanged={reload}
          />
        ) : props.tab === 'requests' ? (
          <ChangeRequests me={props.me} role={role} environments={environments} offline={props.offline} />
        ) : props.tab === 'keys' ? (
          <SdkKeys projectId={project.id} environments={environments} canAdmin={isProjectAdmin} reason={adminReason} />
        ) : props.tab === 'history' ? (
          <History
            url={`/api/projects/${project.id}/changes?limit=100`}
            title={`Changes in ${project.name}`}
            environmentName={(id) => environments.find((e) => e.id === id)?.name}
          />
        ) : props.tab === 'impressions' ? (
          <ImpressionsPanel environments={environments} />
        ) : props.tab === 'members' ? (
          <Members projectId={project.id} canAdmin={isProjectAdmin} reason={adminReason} />
        ) : (
          <FlagsPanel
            project={project}
            environments={environments}
            role={role}
            offline={props.offline}
            actor={props.me.email}
            live={live}
          />
        )}
      </div>
      {dialog === 'rename' ? (
        <RenameProject project={project} onClose={() => setDialog(null)} onDone={props.onProjectsChanged} />
      ) : null}
      {dialog === 'delete' ? (
        <ConfirmDialog
          title={`Delete project ${project.name}?`}
          confirm={`Delete ${project.name}`}
          onClose={() => setDialog(null)}
          onConfirm={async () => {
            await api('DELETE', `/api/projects/${project.id}`)
            setDialog(null)
            navigate('/')
            await props.onProjectsChanged()
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
      ) : null}
    </section>
  )
}

function RenameProject(props: { project: Project; onClose: () => void; onDone: () => Promise<void> }) {
  const [name, setName] = useState(props.project.name)
  return (
    <FormDialog
      title={`Rename ${props.project.name}`}
      submit="Rename"
      onClose={props.onClose}
      onSubmit={async () => {
        await api('PATCH', `/api/projects/${props.project.id}`, { name })
        await props.onDone()
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
