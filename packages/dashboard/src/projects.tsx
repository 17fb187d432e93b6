import { type ReactNode, useState } from 'react'
import { Link } from 'wouter'
import { api, errorText } from './api.js'
import { Dialog, FormDialog } from './dialog.js'
import { queryKeys } from './query-keys.js'
import { navigate, projectPath } from './route.js'
import type { Me, Project, SdkKey } from './types.js'
import { useServiceWrite } from './use-projects.js'

/** The project list (navigation) and, for workspace admins, "New project". */
export function Projects(props: { me: Me; projects: Project[]; currentId: string | null; offline: boolean }) {
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
            <Link href={projectPath(p.id)} aria-current={p.id === props.currentId ? 'page' : undefined}>
              {p.name}
            </Link>
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
          onCreated={(project) => {
            setCreating(false)
            navigate(projectPath(project.id))
          }}
        />
      ) : null}
    </nav>
  )
}

function CreateProject(props: { onClose: () => void; onCreated: (p: Project) => void }) {
  const [name, setName] = useState('')
  const create = useServiceWrite(
    (body: { name: string }) => api<Project & { sdk_key: SdkKey }>('POST', '/api/projects', body),
    [queryKeys.projects()],
  )
  const [sdkKey, setSdkKey] = useState<{ project: Project; key: string } | null>(null)
  if (sdkKey) {
    return (
      <Dialog title={`Project ${sdkKey.project.name} created`} onClose={() => props.onCreated(sdkKey.project)}>
        <p>Its Production SDK key, shown only now. Copy it to your app's configuration:</p>
        <OnceSecret value={sdkKey.key} label="SDK key" />
        <div className="actions">
          <button type="button" className="primary" onClick={() => props.onCreated(sdkKey.project)}>
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
        const created = await create.mutateAsync({ name })
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
  const [copied, setCopied] = useState<'copied' | 'failed' | null>(null)
  return (
    <div className="secret">
      <input readOnly aria-label={props.label} value={props.value} onFocus={(e) => e.target.select()} />
      <button
        type="button"
        onClick={() =>
          void navigator.clipboard
            ?.writeText(props.value)
            .then(() => setCopied('copied'))
            .catch((e: unknown) => {
              console.warn('clipboard write refused:', errorText(e))
              setCopied('failed')
            })
        }
      >
        {copied === 'copied' ? 'Copied' : 'Copy'}
      </button>
      {copied === 'failed' ? (
        <p role="alert" className="error">
          The browser refused the clipboard: select the text above and copy it.
        </p>
      ) : null}
    </div>
  )
}
