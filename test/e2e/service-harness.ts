/**
 * The compiled flag service on a fresh SQLite file, with an admin session for
 * setting up through the REST API: what every dashboard e2e file starts from.
 */
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { tempDir } from '@flagsync/test-support/temp-dir'

export interface Credentials {
  email: string
  password: string
}

interface ApiAnswer<T> {
  status: number
  body: T
}

export interface ServiceHarness {
  readonly server: SpawnedServer
  readonly url: string
  /** The admin's session cookie (`name=value`). */
  readonly cookie: string
  /** The project the service seeds (`Default`). */
  readonly projectId: string
  /** The seeded project's environment with this slug (`production`, `staging`, `development`). */
  environmentId(slug: string): string
  /** The REST API, as the admin unless another cookie or a bearer token is given; 204 gives an undefined body. */
  call<T>(
    method: string,
    path: string,
    body?: unknown,
    auth?: { cookie?: string; bearer?: string },
  ): Promise<ApiAnswer<T>>
  /** Signs in through the API and returns the session cookie. */
  login(who: Credentials): Promise<string>
  close(): void
}

export async function startService(options: {
  prefix: string
  admin: Credentials
  env?: Record<string, string>
}): Promise<ServiceHarness> {
  const dir = tempDir(options.prefix)
  const server = await spawnServer('packages/flag-service/dist/cli.js', {
    DATABASE_URL: `sqlite:${dir.file('service.sqlite')}`,
    ADMIN_EMAIL: options.admin.email,
    ADMIN_PASSWORD: options.admin.password,
    WORKSPACE_NAME: 'Acme',
    POLL_INTERVAL_MS: '200',
    ...options.env,
  })
  const login = async (who: Credentials): Promise<string> => {
    const res = await fetch(`${server.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(who),
    })
    if (res.status !== 200) throw new Error(`login of ${who.email}: ${res.status} ${await res.text()}`)
    return (res.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  }
  const cookie = await login(options.admin)
  const call = async <T>(
    method: string,
    path: string,
    body?: unknown,
    auth: { cookie?: string; bearer?: string } = {},
  ): Promise<ApiAnswer<T>> => {
    const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Service-Request': 'true' }
    if (auth.bearer) headers.Authorization = `Bearer ${auth.bearer}`
    else headers.Cookie = auth.cookie ?? cookie
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (res.status === 204 ? undefined : await res.json()) as T }
  }
  const projectId = (await call<Array<{ id: string }>>('GET', '/api/projects')).body[0]?.id ?? ''
  const environments = (
    await call<Array<{ id: string; slug: string }>>('GET', `/api/projects/${projectId}/environments`)
  ).body
  return {
    server,
    url: server.url,
    cookie,
    projectId,
    environmentId(slug) {
      const found = environments.find((e) => e.slug === slug)
      if (!found) throw new Error(`no seeded environment ${slug}`)
      return found.id
    },
    call,
    login,
    close() {
      server.kill()
      dir.remove()
    },
  }
}
