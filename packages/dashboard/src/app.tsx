import { useCallback, useEffect, useState } from 'react'
import { ApiError, api } from './api.js'
import { Login } from './login.js'
import { ProjectPage } from './project-page.js'
import { Projects } from './projects.js'
import { navigate, useRoute } from './route.js'
import { Tokens } from './tokens.js'
import type { Me, Project } from './types.js'
import { USERS_CACHE, Users } from './users.js'

const ME_CACHE = 'flagsync.dashboard.me'
const PROJECTS_CACHE = 'flagsync.dashboard.projects'

type Session =
  | { state: 'loading' }
  | { state: 'signed-out'; workspaceName: string }
  | { state: 'in'; me: Me; offline: boolean }

/** Signed-in shell: who you are, the projects, and the project you opened. Offline it shows what it cached, read-only. */
export function App() {
  const [session, setSession] = useState<Session>({ state: 'loading' })
  const [projects, setProjects] = useState<Project[]>(() => cached(PROJECTS_CACHE) ?? [])
  const [online, setOnline] = useState(navigator.onLine)
  const route = useRoute()

  const loadSession = useCallback(async () => {
    try {
      const me = await api<Me>('GET', '/api/auth/me')
      localStorage.setItem(ME_CACHE, JSON.stringify(me))
      setSession({ state: 'in', me, offline: false })
    } catch (error) {
      const saved = cached<Me>(ME_CACHE)
      if (error instanceof ApiError && error.offline && saved) {
        setSession({ state: 'in', me: saved, offline: true })
        return
      }
      localStorage.removeItem(ME_CACHE)
      const workspace = await api<{ workspace_name: string }>('GET', '/api/auth/workspace').catch(() => ({
        workspace_name: '',
      }))
      setSession({ state: 'signed-out', workspaceName: workspace.workspace_name })
    }
  }, [])

  const loadProjects = useCallback(async () => {
    try {
      const list = await api<Project[]>('GET', '/api/projects')
      localStorage.setItem(PROJECTS_CACHE, JSON.stringify(list))
      setProjects(list)
    } catch (error) {
      if (!(error instanceof ApiError && error.offline)) throw error
    }
  }, [])

  useEffect(() => {
    void loadSession()
    const up = () => {
      setOnline(true)
      void loadSession()
    }
    const down = () => setOnline(false)
    window.addEventListener('online', up)
    window.addEventListener('offline', down)
    return () => {
      window.removeEventListener('online', up)
      window.removeEventListener('offline', down)
    }
  }, [loadSession])

  const signedIn = session.state === 'in'
  useEffect(() => {
    if (signedIn) void loadProjects()
  }, [signedIn, loadProjects])

  if (session.state === 'loading') return <p className="loading">Loading…</p>
  if (session.state === 'signed-out') {
    return (
      <Login
        workspaceName={session.workspaceName}
        onSignedIn={(me) => {
          // Kept so that a reload without a network opens the saved, read-only view instead of the sign-in form.
          localStorage.setItem(ME_CACHE, JSON.stringify(me))
          setSession({ state: 'in', me, offline: false })
        }}
      />
    )
  }
  const { me } = session
  const offline = session.offline || !online

  async function signOut() {
    await api('POST', '/api/auth/logout').catch(() => {})
    localStorage.removeItem(ME_CACHE)
    localStorage.removeItem(PROJECTS_CACHE)
    localStorage.removeItem(USERS_CACHE)
    navigate('/')
    await loadSession()
  }

  const project = projects.find((p) => p.id === route.projectId) ?? null
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">flagsync · {me.workspace_name}</span>
        <span className="status" id="connection" data-state={offline ? 'offline' : 'online'} role="status">
          {offline ? 'Offline: showing saved data; flag edits are queued' : 'Online'}
        </span>
        <a
          href="/tokens"
          className="top-link"
          aria-current={route.page === 'tokens' ? 'page' : undefined}
          onClick={(e) => {
            e.preventDefault()
            navigate('/tokens')
          }}
        >
          Tokens
        </a>
        <a
          href="/users"
          className="top-link"
          aria-current={route.page === 'users' ? 'page' : undefined}
          onClick={(e) => {
            e.preventDefault()
            navigate('/users')
          }}
        >
          Users
        </a>
        <span className="who">
          {me.name} <span className="role">({me.role})</span>
        </span>
        <button
          type="button"
          onClick={() => void signOut()}
          disabled={offline}
          title={offline ? 'needs the service' : undefined}
        >
          Sign out
        </button>
      </header>
      <div className="layout">
        <Projects me={me} projects={projects} currentId={route.projectId} offline={offline} onChanged={loadProjects} />
        <main id="main" tabIndex={-1}>
          {route.page === 'tokens' ? (
            <Tokens offline={offline} />
          ) : route.page === 'users' ? (
            <Users me={me} offline={offline} />
          ) : project ? (
            <ProjectPage
              key={project.id}
              me={me}
              project={project}
              tab={route.tab}
              offline={offline}
              onProjectsChanged={loadProjects}
            />
          ) : (
            <section className="empty">
              <h1>Projects</h1>
              <p>{projects.length ? 'Choose a project to see its flags.' : 'No projects yet.'}</p>
            </section>
          )}
        </main>
      </div>
    </>
  )
}

function cached<T>(key: string): T | undefined {
  try {
    const raw = localStorage.getItem(key)
    return raw ? (JSON.parse(raw) as T) : undefined
  } catch {
    return undefined
  }
}
