import { type FormEvent, useState } from 'react'
import { ApiError, api } from './api.js'
import type { Me } from './types.js'

/**
 * Sign in with the workspace's email and password. The service counts
 * failures per email: 401s carry `attempts_remaining`, the fifth failure a
 * 429 with `retry_after_seconds`, and the page says both in words. `notice` says why the last session ended.
 */
export function Login(props: { workspaceName: string; onSignedIn: (me: Me) => void; notice?: string | null }) {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  async function submit(event: FormEvent) {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await api('POST', '/api/auth/login', { email, password })
      props.onSignedIn(await api<Me>('GET', '/api/auth/me'))
    } catch (e) {
      setError(loginErrorText(e))
      setPassword('')
    } finally {
      setBusy(false)
    }
  }

  return (
    <main className="login">
      <form onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">Sign in{props.workspaceName ? ` to ${props.workspaceName}` : ''}</h1>
        {props.notice ? (
          <p role="status" className="notice" id="session-ended">
            {props.notice}
          </p>
        ) : null}
        <label>
          Email
          <input
            type="email"
            autoComplete="username"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
        </label>
        <label>
          Password
          <input
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        {error ? (
          <p role="alert" className="error" id="login-error">
            {error}
          </p>
        ) : null}
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  )
}

/**
 * When a locked email (a 429 of login or of a password change, `retry_after_seconds`) may try again, in minutes and
 * as a time of day: "Try again in 15 minutes (at 14:07)."
 */
export function retryText(error: ApiError, now = new Date()): string {
  const seconds = error.body.retry_after_seconds ?? 900
  const minutes = Math.ceil(seconds / 60)
  const at = new Date(now.getTime() + seconds * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
  return `Try again in ${minutes} minute${minutes === 1 ? '' : 's'} (at ${at}).`
}

function loginErrorText(error: unknown): string {
  if (!(error instanceof ApiError)) return String(error)
  if (error.status === 429) return `Too many failed sign-ins for this email: it is locked. ${retryText(error)}`
  if (error.status === 401 && typeof error.body.attempts_remaining === 'number') {
    const n = error.body.attempts_remaining
    return `Wrong email or password. ${n} attempt${n === 1 ? '' : 's'} left before this email is locked for 15 minutes.`
  }
  if (error.offline) return 'The service cannot be reached. Check your connection and try again.'
  return error.message
}
