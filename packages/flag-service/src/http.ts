import { jsonBody, methodNotAllowed } from '@flagsync/server-kit'
import type { RequestHandler, Response, Router } from 'express'

export interface RouterOptions {
  /** Largest JSON body (default '1mb'). */
  bodyLimit?: number | string
}

/** JSON body parsing for a write route: 415 for a non-JSON body, 400 malformed, 413 over the limit. */
export const jsonBodyFor = (options: RouterOptions): RequestHandler[] => jsonBody({ limit: options.bodyLimit ?? '1mb' })

/**
 * Registers a 405 with `Allow` for every method a known path does not answer. Call after the path's
 * real routes, and before any route whose parameter would also match the path.
 */
export function allowOnly(router: Router, path: string, allowed: string): void {
  router.all(path, methodNotAllowed(allowed, `this path answers ${allowed}`))
}

export const noContent = (res: Response) => {
  res.status(204).end()
}
