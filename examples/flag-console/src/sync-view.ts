/** The sync status in the header, the blocked/offline banner and the pending-changes panel. */
import type { OutboxEntry, SyncStatus } from '@flagsync/sync-client'
import { h, icon, replaceChildren, setAttr, setText } from './dom.js'
import {
  describeOperation,
  describeStatus,
  type KeyProblem,
  pendingLabel,
  rejectedOperations,
  type Tone,
} from './model.js'

export interface SyncViewElements {
  pill: HTMLElement
  banner: HTMLElement
  pendingList: HTMLOListElement
  pendingEmpty: HTMLElement
  syncNow: HTMLButtonElement
}

export interface SyncViewActions {
  discard(ids: number[], label: string): Promise<void>
  retry(): void
}

const TONE_ICONS: Record<Tone, Parameters<typeof icon>[0]> = {
  ok: 'check',
  pending: 'clock',
  busy: 'sync',
  offline: 'cloudOff',
  warn: 'clock',
  error: 'alert',
}

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' })

export class SyncView {
  private readonly pillText: HTMLSpanElement
  private readonly pillSr: HTMLSpanElement
  private pillIconTone: Tone | null = null
  private bannerKey = ''
  private listKey = ''
  private status: SyncStatus | null = null
  private keyProblem: KeyProblem = null
  private entries: readonly OutboxEntry[] = []
  /** Flags with a conflict: their queued edits wait for the editor's decision. */
  private conflicted: ReadonlySet<string> = new Set()

  constructor(
    private readonly els: SyncViewElements,
    private readonly actions: SyncViewActions,
  ) {
    this.pillText = h('span', { class: 'pill-text' })
    this.pillSr = h('span', { class: 'visually-hidden' })
    replaceChildren(els.pill, this.pillText, this.pillSr)
    els.syncNow.addEventListener('click', () => actions.retry())
  }

  /** Re-renders everything from the status and the outbox entries read after it. */
  render(status: SyncStatus, entries: readonly OutboxEntry[], online: boolean, conflicted?: ReadonlySet<string>): void {
    this.status = status
    this.entries = entries
    if (conflicted) this.conflicted = conflicted
    this.renderPill(Date.now())
    this.renderBanner(status, entries, online)
    this.renderPending(status, entries)
    this.els.syncNow.hidden = !(online && status.pending > 0 && (status.state === 'idle' || status.state === 'backoff'))
  }

  /** The server refuses this browser's SDK key, or wants one (stream or receiver): the pill says so. */
  setKeyProblem(problem: KeyProblem): void {
    if (this.keyProblem === problem) return
    this.keyProblem = problem
    this.renderPill(Date.now())
    if (this.status) this.renderPending(this.status, this.entries)
  }

  /** Once a second while a retry is scheduled, so the countdown moves. */
  tick(): void {
    if (this.status?.state === 'backoff') this.renderPill(Date.now())
  }

  private renderPill(now: number): void {
    const status = this.status
    if (!status) return
    const view = describeStatus(status, now, this.keyProblem)
    const { pill } = this.els
    pill.dataset.tone = view.tone
    pill.dataset.state = status.state
    pill.dataset.key = this.keyProblem ?? 'ok'
    pill.dataset.pending = String(status.pending)
    setAttr(pill, 'title', view.label)
    if (this.pillIconTone !== view.tone) {
      this.pillIconTone = view.tone
      pill.querySelector('svg')?.remove()
      pill.prepend(icon(TONE_ICONS[view.tone], view.tone === 'busy' ? 'icon icon-spin' : 'icon'))
    }
    setText(this.pillText, view.label)
    // The countdown changes every second: screen readers hear a steady sentence instead.
    const ticking = status.state === 'backoff'
    setAttr(this.pillText, 'aria-hidden', ticking ? 'true' : null)
    setText(
      this.pillSr,
      ticking ? `Could not reach the server, retrying automatically. ${pendingLabel(status.pending)}.` : '',
    )
  }

  private renderBanner(status: SyncStatus, entries: readonly OutboxEntry[], online: boolean): void {
    const error = status.lastError
    if (status.state === 'blocked' && error) {
      const rejected = rejectedOperations(entries, error)
      const rejectedIds = new Set(rejected.flatMap((r) => r.ids))
      const waiting = entries.filter((e) => !rejectedIds.has(e.id)).length
      const key = JSON.stringify(['blocked', error.batchId, error.message, rejected.map((r) => r.ids), waiting])
      if (key === this.bannerKey) return
      this.bannerKey = key
      const items = rejected.map(({ operation, ids }) => {
        const label = describeOperation(operation)
        const discard = h(
          'button',
          { type: 'button', class: 'btn btn-small btn-danger-solid' },
          'Discard',
          h('span', { class: 'visually-hidden' }, ` “${label}”`),
        )
        discard.addEventListener('click', () => {
          discard.disabled = true
          this.actions.discard(ids, label).finally(() => {
            discard.disabled = false
          })
        })
        return h('li', { class: 'rejected-item' }, h('span', { class: 'rejected-op' }, label), discard)
      })
      const retry = h('button', { type: 'button', class: 'btn btn-small' }, icon('sync'), 'Try again')
      retry.addEventListener('click', () => this.actions.retry())
      replaceChildren(
        this.els.banner,
        h(
          'section',
          { class: 'banner banner-error', role: 'alert', 'aria-labelledby': 'blocked-title' },
          icon('alert', 'icon banner-icon'),
          h(
            'div',
            { class: 'banner-body' },
            h('h2', { id: 'blocked-title', class: 'banner-title' }, 'Sync is blocked: the server rejected a change'),
            h('p', { class: 'receiver-error' }, error.message),
            h('ul', { class: 'rejected-list', 'aria-label': 'Rejected changes' }, ...items),
            h(
              'p',
              { class: 'banner-note' },
              waiting === 0
                ? 'Discard the rejected change, or try again once the conflict is resolved.'
                : `${waiting === 1 ? '1 other change waits' : `${waiting} other changes wait`} behind it and will be sent once it is discarded.`,
            ),
          ),
          h('div', { class: 'banner-actions' }, retry),
        ),
      )
      return
    }
    if (!online) {
      const key = 'offline'
      if (key === this.bannerKey) return
      this.bannerKey = key
      replaceChildren(
        this.els.banner,
        h(
          'section',
          { class: 'banner banner-info', 'aria-label': 'Offline' },
          icon('cloudOff', 'icon banner-icon'),
          h(
            'div',
            { class: 'banner-body' },
            h('h2', { class: 'banner-title' }, 'You are offline'),
            h(
              'p',
              { class: 'banner-note' },
              'Keep editing: changes are saved on this device and sent when the connection returns.',
            ),
          ),
        ),
      )
      return
    }
    if (this.bannerKey !== '') {
      this.bannerKey = ''
      replaceChildren(this.els.banner)
    }
  }

  private renderPending(status: SyncStatus, entries: readonly OutboxEntry[]): void {
    const error = status.state === 'blocked' ? status.lastError : null
    const rejected = new Set(error ? rejectedOperations(entries, error).flatMap((r) => r.ids) : [])
    const rows = entries.map((entry) => {
      const state = rejected.has(entry.id)
        ? 'rejected'
        : this.conflicted.has(entry.operation.recordId)
          ? 'waiting'
          : entry.batchId === null
            ? 'queued'
            : error
              ? 'held'
              : status.state === 'syncing'
                ? 'sending'
                : 'queued'
      return { entry, state }
    })
    const key = JSON.stringify([
      rows.map((r) => [r.entry.id, r.state]),
      status.lastError?.message ?? null,
      this.keyProblem,
    ])
    if (key === this.listKey) return
    this.listKey = key

    const labels: Record<string, string> = {
      rejected: 'Rejected',
      held: 'Held',
      waiting: 'Waits for your decision',
      sending: 'Sending',
      queued: 'Queued',
    }
    replaceChildren(
      this.els.pendingList,
      ...rows.map(({ entry, state }) =>
        h(
          'li',
          { class: 'pending-item', 'data-state': state },
          h('span', { class: 'pending-op' }, describeOperation(entry.operation)),
          h(
            'span',
            { class: 'pending-meta' },
            h('time', { datetime: new Date(entry.queuedAt).toISOString() }, timeFormat.format(entry.queuedAt)),
            h('span', { class: `chip chip-${state}` }, labels[state]),
          ),
        ),
      ),
    )
    this.els.pendingList.hidden = rows.length === 0
    const empty = this.els.pendingEmpty
    if (this.keyProblem !== null) {
      const why = this.keyProblem === 'rejected' ? 'rejected this browser’s SDK key' : 'needs its SDK key'
      replaceChildren(empty, h('span', { class: 'pending-error' }, `Not connected: the server ${why}.`))
    } else if (rows.length === 0) {
      replaceChildren(empty, icon('check', 'icon empty-icon'), h('span', {}, 'Everything is synced.'))
    } else if (status.state === 'backoff' && status.lastError) {
      replaceChildren(empty, h('span', { class: 'pending-error' }, `Last attempt failed: ${status.lastError.message}`))
    } else {
      replaceChildren(empty)
    }
  }
}
