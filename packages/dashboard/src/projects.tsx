import { type ReactNode, useState } from 'react'
import { api } from './api.js'
import { Dialog, FormDialog } from './dialog.js'
import { navigate, projectPath } from './route.js'
import type { Me, Project, SdkKey } from './types.js'

/** The project list (navigation) and, for workspace admins, "New project". */
export function Projects(props: {
  me: Me
  projects: Project[]
  currentId: string | null
  offline: boolean
  onChanged: () => Promise<void>
}) {
  const [creating, setCreating] = useState(false)
  const canCreate = props.me.role === 'admin' && !props.offline
  const reason = props.offline
    ? 'Creating a project needs the service: it cannot be queued offline'
    : 'Only workspace admins create projects'
  return (
    <nav className="projects" aria-label="Projects">
      <h2>Projects</h2>
      <ul>
        {props.projects.map((p) => (
          <li key={p.id}>
            <a
              href={projectPath(p.id)}
              aria-current={p.id === props.currentId ? 'page' : undefined}
              onClick={(e) => {
                e.preventDefault()
                navigate(projectPath(p.id))
              }}
            >
              {p.name}
            </a>
          </li>
        ))}
      </ul>
      <button
        type="button"
        onClick={() => setCreating(true)}
        disabled={!canCreate}
        title={canCreate ? undefined : reason}
      >
        New project
      </button>
      {!canCreate ? <p className="hint">{reason}.</p> : null}
      {creating ? (
        <CreateProject
          onClose={() => setCreating(false)}
          onCreated={async (project) => {
            setCreating(false)
            await props.onChanged()
            navigate(projectPath(project.id))
          }}
        />
      ) : null}
    </nav>
  )
}

function CreateProject(props: { onClose: () => void; onCreated: (p: Project) => Promise<void> }) {
  const [name, setName] = useState('')
  const [sdkKey, setSdkKey] = useState<{ project: Project; key: string } | null>(null)
  if (sdkKey) {
    return (
      <Dialog title={`Project ${sdkKey.project.name} created`} onClose={() => void props.onCreated(sdkKey.project)}>
        <p>Its Production SDK key, shown only now. Copy it to your app's configuration:</p>
        <OnceSecret value={sdkKey.key} label="SDK key" />
        <div className="actions">
          <button type="button" className="primary" onClick={() => void props.onCreated(sdkKey.project)}>
            Done
          </button>
        </div>
      </Dialog>
    )
  }
  return (
    <FormDialog
      title="New project"
      submit="Create project"
      onClose={props.onClose}
      onSubmit={async () => {
        const created = await api<Project & { sdk_key: SdkKey }>('POST', '/api/projects', { name })
        setSdkKey({ project: created, key: created.sdk_key.key ?? '' })
      }}
    >
      <label>
        Name
        <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <p className="hint">It starts with Production, Staging and Development, and a Production SDK key.</p>
    </FormDialog>
  )
}

/** The notice after creating a key or token: what it is, the secret once, and a button that dismisses it. */
export function SecretNotice(props: { value: string; label: string; children: ReactNode; onDismiss: () => void }) {
  return (
    <div className="notice-box" role="status">
      <p>{props.children}, shown only now:</p>
      <OnceSecret value={props.value} label={props.label} />
      <button type="button" onClick={props.onDismiss}>
        I have copied it
      </button>
    </div>
  )
}

/** A secret the service shows once: readable, selectable, with a copy button. */
function OnceSecret(props: { value: string; label: string }) {
  const [copied, setCopied] = useState(false)
  return (
    <div className="secret">
      <input readOnly aria-label={props.label} value={props.value} onFocus={(e) => e.target.select()} />
      <button
        type="button"
        onClick={() =>
          void navigator.clipboard
            ?.writeText(props.value)
            .then(() => setCopied(true))
            .catch(() => setCopied(false))
        }
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  )
}
