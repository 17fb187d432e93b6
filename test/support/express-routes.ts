import { readFileSync } from 'node:fs'

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean | undefined> }
  rawPath?: unknown
  handle: { stack?: Layer[] }
}

/** `METHOD /path` with every `:name` written `:param`, so README names and code names may differ. */
const normalize = (method: string, path: string) =>
  `${method.toUpperCase()} ${path.replace(/:[A-Za-z_]+/g, ':param').replace(/(.)\/$/, '$1')}`

/**
 * Every route mounted on an Express 5 app, walking its router stack and the
 * routers mounted in it (with their mount paths). `router.all` handlers
 * (the 405 answers) are not routes of their own.
 */
export function mountedRoutes(app: unknown): Set<string> {
  const out = new Set<string>()
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path]
        for (const path of paths) {
          for (const [method, on] of Object.entries(layer.route.methods)) {
            if (on && method !== '_all') out.add(normalize(method, `${prefix}${path === '/' && prefix ? '' : path}`))
          }
        }
      } else if (layer.handle.stack) {
        const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : ''
        walk(layer.handle.stack, prefix + mount)
      }
    }
  }
  walk((app as { router: { stack: Layer[] } }).router.stack, '')
  return out
}

/** Every `| METHOD | \`/path\` |` row of the Markdown tables in a file. */
export function documentedRoutes(file: string | URL): Set<string> {
  const out = new Set<string>()
  for (const match of readFileSync(file, 'utf8').matchAll(/^\|\s*(GET|POST|PATCH|PUT|DELETE)\s*\|\s*`([^`]+)`/gm)) {
    out.add(normalize(match[1] as string, (match[2] as string).split('?')[0] as string))
  }
  return out
}
