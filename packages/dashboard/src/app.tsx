import { Link } from 'wouter'
import { ErrorLine } from './error-line.js'
import { Account, Tokens, Users } from './lazy-pages.js'
import { Login } from './login.js'
import { PageBoundary } from './page-boundary.js'
import { ProjectPage } from './project-page.js'
import { Projects } from './projects.js'
import { type Route, useRoute } from './route.js'
import { SessionEventsContext, useSessionFollow } from './session-events.js'
import type { Me, Project } from './types.js'
import { useProjects } from './use-projects.js'
import { useSession } from './use-session.js'

const NO_PROJECTS: Project[] = []

/** Signed-in shell: who you are, the projects, and the project you opened. Offline it shows what it cached, read-only. */
export function App() {
  const { session, online, signedIn, signOut, error } = useSession()
  const projectsQuery = useProjects(session.state === 'in')
  const projects = projectsQuery.data ?? NO_PROJECTS
  const route = useRoute()
  const offline = session.state === 'in' && (session.offline || !online)
  // A project page's stream carries people changes; other pages hold a stream of their own.
  const follow = useSessionFollow(session.state === 'in' ? session.me : null, {
    ownStream: route.projectId === null,
    offline,
  })
  if (session.state === 'loading') return <p className="loading">Loading…</p>
  if (session.state === 'signed-out')
    return (
      <>
        <ErrorLine errors={[error]} />
        <Login workspaceName={session.workspaceName} onSignedIn={signedIn} notice={follow.ended.message} />
      </>
    )
  const { me } = session
  const onSignOut = () => {
    follow.ended.signingOut()
    signOut.mutate()
  }
  return (
    <SessionEventsContext.Provider value={follow.events}>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <TopBar me={me} page={route.page} offline={offline} onSignOut={onSignOut} />
      <ErrorLine errors={[signOut.error, offline ? null : projectsQuery.error]} />
      <div className="layout">
        <Projects me={me} projects={projects} currentId={route.projectId} offline={offline} />
        <main id="main" tabIndex={-1}>
          <PageBoundary key={route.page ?? 'project'}>
            <MainView me={me} route={route} projects={projects} offline={offline} />
          </PageBoundary>
        </main>
      </div>
    </SessionEventsContext.Provider>
  )
}

function TopBar(props: { me: Me; page: Route['page']; offline: boolean; onSignOut: () => void }) {
  const { me, offline } = props
  return (
    <header className="top">
      <span className="brand">flagsync · {me.workspace_name}</span>
      <span className="status" id="connection" data-state={offline ? 'offline' : 'online'} role="status">
        {offline ? 'Offline: showing saved data; flag edits are queued' : 'Online'}
      </span>
      <TopLink path="/tokens" current={props.page === 'tokens'}>
        Tokens
      </TopLink>
      <TopLink path="/users" current={props.page === 'users'}>
        Users
      </TopLink>
      <span className="who">
        {me.name} <span className="role">({me.role})</span>
      </span>
      <TopLink path="/account" current={props.page === 'account'}>
        Account
      </TopLink>
      <button
        type="button"
        onClick={props.onSignOut}
        disabled={offline}
        title={offline ? 'needs the service' : undefined}
      >
        Sign out
      </button>
    </header>
  )
}

/** A page link of the top bar, followed in place (history API) rather than by a page load. */
function TopLink(props: { path: string; current: boolean; children: string }) {
  return (
    <Link href={props.path} className="top-link" aria-current={props.current ? 'page' : undefined}>
      {props.children}
    </Link>
  )
}

function MainView(props: { me: Me; route: Route; projects: Project[]; offline: boolean }) {
  const { me, route, offline } = props
  if (route.page === 'tokens') return <Tokens offline={offline} />
  if (route.page === 'users') return <Users me={me} offline={offline} />
  if (route.page === 'account') return <Account me={me} offline={offline} />
  const project = props.projects.find((p) => p.id === route.projectId)
  if (!project) {
    return (
      <section className="empty">
        <h1>Projects</h1>
        <p>{props.projects.length ? 'Choose a project to see its flags.' : 'No projects yet.'}</p>
      </section>
    )
  }
  return <ProjectPage key={project.id} me={me} project={project} tab={route.tab} offline={offline} />
}
