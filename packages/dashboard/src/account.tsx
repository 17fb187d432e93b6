import { type FormEvent, useState } from 'react'
import { Link } from 'wouter'
import { ApiError, api, errorText } from './api.js'
import { retryText } from './login.js'
import type { Me } from './types.js'

/**
 * The signed-in user's own page: who they are (a workspace admin changes names and roles, on the Users page) and
 * their password, changed with the current one (`POST /api/auth/password`).
 */
export function Account(props: { me: Me; offline: boolean }) {
  const { me } = props
  return (
    <section aria-labelledby="account-title">
      <h1 id="account-title">Your account</h1>
      <dl className="facts">
        <dt>Name</dt>
        <dd>{me.name}</dd>
        <dt>Email</dt>
        <dd>{me.email}</dd>
        <dt>Workspace role</dt>
        <dd>{me.role}</dd>
      </dl>
      <p className="hint">
        {me.role === 'admin' ? (
          <>
            Names and roles are changed on the <Link href="/users">Users</Link> page.
          </>
        ) : (
          'A workspace admin changes your name and role.'
        )}
      </p>
      <ChangePassword offline={props.offline} />
    </section>
  )
}

/** The service's answer to a password change in words: a wrong current password counts toward the lockout. */
export function passwordErrorText(error: unknown): string {
  if (!(error instanceof ApiError)) return errorText(error)
  // The lock is the login lockout: signing in waits too, which matters to someone about to sign out.
  if (error.status === 429) {
    return `Too many wrong passwords: changing your password and signing in are locked. ${retryText(error)}`
  }
  if (error.status === 403 && typeof error.body.attempts_remaining === 'number') {
    const n = error.body.attempts_remaining
    return `The current password is wrong. ${n} attempt${n === 1 ? '' : 's'} left before sign-in is locked for 15 minutes.`
  }
  return errorText(error)
}

function ChangePassword(props: { offline: boolean }) {
  const [current, setCurrent] = useState('')
  const [next, setNext] = useState('')
  const [confirm, setConfirm] = useState('')
  const [error, setError] = useState<string | null>(null)
  const [done, setDone] = useState(false)
  const [busy, setBusy] = useState(false)
  const mismatch = confirm !== '' && confirm !== next

  async function submit(event: FormEvent) {
    event.preventDefault()
    if (next !== confirm) return setError('The new passwords do not match.')
    setBusy(true)
    setError(null)
    setDone(false)
    try {
      await api('POST', '/api/auth/password', { current_password: current, new_password: next })
      setDone(true)
      setNext('')
      setConfirm('')
    } catch (e) {
      setError(passwordErrorText(e))
    } finally {
      setCurrent('')
      setBusy(false)
    }
  }

  return (
    <form onSubmit={submit} aria-labelledby="password-title" className="account-form">
      <h2 id="password-title">Change your password</h2>
      <p className="hint" id="password-effect">
        Your other sessions are signed out; this one and your personal access tokens stay.
      </p>
      <PasswordField label="Current password" value={current} onChange={setCurrent} autoComplete="current-password" />
      <PasswordField label="New password" value={next} onChange={setNext} autoComplete="new-password" minLength={8} />
      <PasswordField
        label="Confirm new password"
        value={confirm}
        onChange={setConfirm}
        autoComplete="new-password"
        invalid={mismatch}
      />
      {mismatch ? <p className="hint">The new passwords do not match.</p> : null}
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
      {done ? (
        <p role="status" className="notice">
          Password changed. Your other sessions were signed out.
        </p>
      ) : null}
      <button
        type="submit"
        className="primary"
        disabled={busy || props.offline}
        title={props.offline ? 'needs the service (offline)' : undefined}
      >
        Change password
      </button>
    </form>
  )
}

function PasswordField(props: {
  label: string
  value: string
  onChange: (value: string) => void
  autoComplete: string
  minLength?: number
  invalid?: boolean
}) {
  return (
    <label>
      {props.label}
      <input
        required
        type="password"
        autoComplete={props.autoComplete}
        minLength={props.minLength}
        aria-invalid={props.invalid || undefined}
        aria-describedby="password-effect"
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
      />
    </label>
  )
}
