import type { Request, Response } from 'express'
import { intId } from '../schemas.js'
import { noRequest } from './rows.js'

export type ChangeRequestHandler = (req: Request, res: Response) => Promise<void>

/** The `:id` of a change request route; 404 for anything that is not one. */
export function requestIdOf(raw: string | string[] | undefined): number {
  if (typeof raw !== 'string') throw noRequest(String(raw))
  const id = intId(raw)
  if (id === undefined) throw noRequest(String(raw))
  return id
}
