import { DASHBOARD_STREAM_EVENTS, type PeopleEvent, peopleEventSchema } from '@flagsync/protocol'
import { type QueryClient, useQueryClient } from '@tanstack/react-query'
import { createContext, useContext, useEffect, useMemo, useRef, useState } from 'react'
import { queryKeys } from './query-keys.js'
import type { Me } from './types.js'

/** What a dashboard stream tells the signed-in shell, whichever page holds the stream. */
export interface SessionEvents {
  /** A user's role, name or password changed (the service's `people` event). */
  people(event: PeopleEvent): void
  /** The stream failed or the service ended it: the session may have ended. */
  dropped(): void
}

type Source = Pick<EventSource, 'addEventListener'>

/** Hands a dashboard stream's `people` events and failures to `events` (a project's stream or the shell's own). */
export function followSessionEvents(source: Source, events: () => Iterable<SessionEvents>): void {
  source.addEventListener(DASHBOARD_STREAM_EVENTS.people, (event) => {
    const people = peopleEventSchema.safeParse(parse((event as MessageEvent).data))
    if (people.success) for (const listener of events()) listener.people(people.data)
  })
  source.addEventListener('error', () => {
    for (const listener of events()) listener.dropped()
  })
}

/** Why the session ended, in the words the sign-in page shows, when the service said so on the stream. */
function endedBecause(action: string): string | null {
  if (action === 'user.password_reset') return 'A workspace admin reset your password. Sign in with the new one.'
  if (action === 'user.password_changed') return 'Your password was changed in another session. Sign in again.'
  if (action === 'user.deleted') return 'A workspace admin deleted your account.'
  return null
}

export const SESSION_ENDED = 'Your session ended (signed out elsewhere, or your password changed). Sign in again.'

/**
 * Reacts to people events: everyone re-reads the user list and the people activity; the user named re-reads who
 * they are (their role and name in the header, the controls they get). A stream failing re-reads who is signed in,
 * so a session ended elsewhere lands on the sign-in page at once. `reason.current` keeps the service's word on why.
 */
export function sessionEventsFor(client: QueryClient, meId: number, reason: { current: string | null }): SessionEvents {
  const checkMe = async () => {
    await client.invalidateQueries({ queryKey: queryKeys.me() })
    // Still signed in (this session survived an own password change): no reason to show later.
    if (client.getQueryData(queryKeys.me())) reason.current = null
  }
  return {
    people(event) {
      void client.invalidateQueries({ queryKey: queryKeys.users() })
      void client.invalidateQueries({ queryKey: queryKeys.peopleAudit() })
      if (event.user_id !== meId) return
      reason.current = endedBecause(event.action)
      void client.invalidateQueries({ queryKey: queryKeys.projects() })
      void checkMe()
    },
    dropped() {
      void checkMe()
    },
  }
}

/** The shell's handlers, for a project page's stream to pass its events to (`useProjectStream`). */
export const SessionEventsContext = createContext<SessionEvents | null>(null)

export function useSessionEventsContext(): SessionEvents | null {
  return useContext(SessionEventsContext)
}

/**
 * The signed-in shell's follow of people changes. A page without a project stream holds one of its own,
 * `/stream?environment_id=` (no environment: the dashboard events alone); a project page's stream carries them
 * instead, so a tab holds one stream. `ended` says why the last session ended when it did not end by signing out.
 */
export function useSessionFollow(me: Me | null, options: { ownStream: boolean; offline: boolean }) {
  const client = useQueryClient()
  const reason = useRef<string | null>(null)
  const meId = me?.id ?? null
  const events = useMemo(() => (meId === null ? null : sessionEventsFor(client, meId, reason)), [client, meId])
  const open = events !== null && options.ownStream && !options.offline
  useEffect(() => {
    if (!open || !events) return
    const source = new EventSource('/stream?environment_id=')
    followSessionEvents(source, () => [events])
    return () => source.close()
  }, [open, events])
  return { events, ended: useEndedMessage(meId, reason) }
}

/** The message for the sign-in page after a session ends without its user signing out (`signedOut` clears it). */
function useEndedMessage(meId: number | null, reason: { current: string | null }) {
  const [message, setMessage] = useState<string | null>(null)
  const previous = useRef(meId)
  const signingOut = useRef(false)
  useEffect(() => {
    if (previous.current !== null && meId === null && !signingOut.current) setMessage(reason.current ?? SESSION_ENDED)
    if (meId !== null) {
      setMessage(null)
      signingOut.current = false
    }
    reason.current = meId === null ? null : reason.current
    previous.current = meId
  }, [meId, reason])
  return {
    message,
    /** Call before the user's own sign-out: its end is not news. */
    signingOut: () => {
      signingOut.current = true
    },
  }
}

function parse(data: unknown): unknown {
  try {
    return typeof data === 'string' ? JSON.parse(data) : undefined
  } catch {
    return undefined
  }
}
