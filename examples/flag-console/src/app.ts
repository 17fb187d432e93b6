/** The console page: wires the flag client (what to show) and the sync client (where edits go) to the DOM. */
import type { FlagClient } from '@flagsync/flag-client'
import type { Conflict, ConflictResolution, OutboxEntry, SyncClient, SyncStatus } from '@flagsync/sync-client'
import { discardMessage, type HistoryEntry } from './conflict-model.js'
import { ConflictView } from './conflict-view.js'
import { confirmDialog, connectDialog, createFlagDialog } from './dialogs.js'
import { byId, h, icon, replaceChildren, setText } from './dom.js'
import { FlagList } from './flag-list.js'
import { historyDrawer } from './history-drawer.js'
import { type ConsoleFlag, type KeyProblem, pendingKeys } from './model.js'
import { SyncView } from './sync-view.js'

export interface ConsoleOptions {
  flags: FlagClient
  sync: SyncClient
  sdkKey: string | null
  saveSdkKey(key: string | null): void
  /** The editor's name (sent with every change as its author), or null until given. */
  editorName: string | null
  saveEditorName(name: string): void
}

export class ConsoleApp {
  private readonly flags: FlagClient
  private readonly sync: SyncClient
  private readonly flagList: FlagList
  private readonly stream = byId<HTMLSpanElement>('stream-status')
  private readonly keyButton = byId<HTMLButtonElement>('key-button')
  private readonly toastEl = byId<HTMLDivElement>('toast')
  private readonly syncView: SyncView
  private readonly conflictView: ConflictView
  private conflicts: Conflict[] = []
  /** Each conflicted flag's audit trail (who changed it, when), fetched once per set of conflicts. */
  private readonly histories = new Map<string, HistoryEntry[]>()
  private status: SyncStatus | null = null
  private entries: OutboxEntry[] = []
  private outboxReading = false
  private outboxDirty = false
  private toastTimer: ReturnType<typeof setTimeout> | undefined
  private askedForKey = false

  constructor(private readonly options: ConsoleOptions) {
    this.flags = options.flags
    this.sync = options.sync
    this.flagList = new FlagList(options.flags, {
      toggle: (key, enabled) => this.toggle(key, enabled),
      save: (key, changes) => this.save(key, changes),
      remove: (key, focus) => this.remove(key, focus),
      openHistory: (key) => this.openHistory(key),
      focusConflict: (key) => this.focusConflict(key),
      openCreate: () => this.openCreate(),
    })
    this.syncView = new SyncView(
      {
        pill: byId('sync-status'),
        banner: byId('banner'),
        pendingList: byId('pending-list'),
        pendingEmpty: byId('pending-empty'),
        syncNow: byId('sync-now'),
      },
      {
        discard: (ids, label) => this.discard(ids, label),
        retry: () => {
          this.sync.flush().catch((e: unknown) => this.toast(`Sync failed: ${message(e)}`, 'error'))
        },
      },
    )
    const conflictsEl = h('section', { id: 'conflicts', class: 'conflicts', 'aria-label': 'Conflicts', hidden: true })
    byId('pending-list').before(conflictsEl)
    this.conflictView = new ConflictView(conflictsEl, {
      resolve: (conflict, resolution, note) => this.resolve(conflict, resolution, note),
      history: (key) => this.openHistory(key),
    })
  }

  start(): void {
    this.flags.subscribe((event) => {
      if (event.type === 'flags') this.flagList.render()
      else this.renderStream()
    })
    this.sync.subscribe((status) => {
      this.status = status
      this.readOutbox()
    })
    void this.flags.ready().then(() => {
      this.flagList.ready = true
      this.flagList.render()
    })
    window.addEventListener('online', () => this.onConnectivity())
    window.addEventListener('offline', () => this.onConnectivity())
    setInterval(() => this.syncView.tick(), 1000)

    byId<HTMLButtonElement>('new-flag').addEventListener('click', () => this.openCreate())
    this.keyButton.prepend(icon('key'))
    this.keyButton.hidden = this.options.sdkKey === null
    this.keyButton.addEventListener('click', () => this.askForKey())
    this.flagList.render()
    this.renderStream()
    if (this.options.editorName === null) this.askName()
  }

  /** Asked once, in the panel (not a modal): the name the team sees next to this editor's changes. */
  private askName(): void {
    const input = h('input', { id: 'editor-name', type: 'text', maxlength: 80, autocomplete: 'name' })
    const save = h('button', { type: 'submit', class: 'btn btn-small btn-primary' }, 'Save')
    const form = h(
      'form',
      { class: 'name-form', 'aria-label': 'Your name' },
      h('label', { for: 'editor-name' }, 'Your name'),
      h('p', { class: 'muted' }, 'Shown to your team next to the changes you make.'),
      h('div', { class: 'name-row' }, input, save),
    )
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      const name = input.value.trim()
      if (name !== '') this.options.saveEditorName(name)
    })
    byId('pending-heading').closest('aside')?.prepend(form)
  }

  private async resolve(conflict: Conflict, resolution: ConflictResolution, note: string): Promise<void> {
    try {
      await this.sync.resolve(conflict.id, resolution)
      this.afterEdit(note)
    } catch (e) {
      this.toast(`Could not resolve: ${message(e)}`, 'error')
    }
  }

  private async loadHistory(key: string): Promise<HistoryEntry[]> {
    const headers: Record<string, string> = this.options.sdkKey
      ? { Authorization: `Bearer ${this.options.sdkKey}` }
      : {}
    const res = await fetch(`${location.origin}/api/flags/${encodeURIComponent(key)}/history`, { headers })
    if (!res.ok) throw new Error(res.status === 401 ? 'the server needs its key' : `the server answered ${res.status}`)
    return ((await res.json()) as { entries: HistoryEntry[] }).entries
  }

  private openHistory(key: string): void {
    historyDrawer(key, () => this.loadHistory(key), document.activeElement as HTMLElement | null)
  }

  /** The conflicts changed: fetch who made the other change, then show them in the panel and on the rows. */
  private renderConflicts(): void {
    const keys = new Set(this.conflicts.map((c) => c.recordId))
    this.flagList.setConflicted(keys)
    this.conflictView.render(this.conflicts, this.histories)
    for (const key of keys) {
      if (this.histories.has(key)) continue
      this.histories.set(key, [])
      this.loadHistory(key).then(
        (entries) => {
          this.histories.set(key, entries)
          this.conflictView.render(this.conflicts, this.histories)
        },
        () => undefined, // offline: the conflict shows without a name
      )
    }
    for (const key of [...this.histories.keys()]) if (!keys.has(key)) this.histories.delete(key)
  }

  private focusConflict(key: string): void {
    const card = document.querySelector<HTMLElement>(`#conflicts .conflict[data-key="${CSS.escape(key)}"]`)
    card?.scrollIntoView({ block: 'nearest' })
    card?.querySelector<HTMLElement>('button')?.focus()
  }

  // ---- edits: all through the outbox, shown at once ------------------------------

  private openCreate(): void {
    createFlagDialog({
      exists: (key) => this.flags.getFlag(key) !== undefined,
      create: async (flag) => {
        await this.flags.createFlag({ ...flag })
        this.afterEdit(`Created “${flag.key}”`)
        this.flagList.row(flag.key)?.el.scrollIntoView({ block: 'nearest' })
      },
    })
  }

  private toggle(key: string, enabled: boolean): void {
    this.flags.updateFlag(key, { is_enabled: enabled }).then(
      () => this.afterEdit(null),
      (e: unknown) => this.toast(`Could not change “${key}”: ${message(e)}`, 'error'),
    )
  }

  private async save(key: string, changes: Partial<ConsoleFlag>): Promise<void> {
    await this.flags.updateFlag(key, changes)
    this.afterEdit(`Saved “${key}”`)
  }

  private remove(key: string, returnFocus: HTMLElement): void {
    void confirmDialog({
      title: `Delete “${key}”?`,
      message:
        'Apps evaluating this flag will get their default value. The deletion is sent to the server with your other changes.',
      confirmLabel: 'Delete flag',
      returnFocus,
    }).then(async (confirmed) => {
      if (!confirmed) return
      const keys = this.flagList.keys()
      const next = keys[keys.indexOf(key) + 1] ?? keys[keys.indexOf(key) - 1]
      try {
        await this.flags.deleteFlag(key)
      } catch (e) {
        this.toast(`Could not delete “${key}”: ${message(e)}`, 'error')
        return
      }
      this.afterEdit(`Deleted “${key}”`)
      const target = next ? this.flagList.row(next)?.el.querySelector<HTMLElement>('[role="switch"]') : null
      ;(target ?? byId('flags-heading')).focus()
    })
  }

  private async discard(ids: number[], label: string): Promise<void> {
    const confirmed = await confirmDialog({
      title: 'Discard this change?',
      message: discardMessage(label),
      confirmLabel: 'Discard change',
      returnFocus: (document.activeElement as HTMLElement | null) ?? byId('pending-heading'),
    })
    if (!confirmed) return
    try {
      await this.sync.discard(ids)
      this.toast(`Discarded: ${label}`)
    } catch (e) {
      this.toast(`Could not discard: ${message(e)}`, 'error')
    }
  }

  /** Sends right away when nothing stands in the way, instead of waiting for the next background pass. */
  private afterEdit(note: string | null): void {
    const online = navigator.onLine
    if (note) this.toast(online ? note : `${note} — saved on this device`)
    if (online && (this.status === null || this.status.state === 'idle')) this.sync.flush().catch(() => {})
  }

  // ---- rendering ------------------------------------------------------------------

  private onConnectivity(): void {
    this.renderStream()
    if (this.status) this.syncView.render(this.status, this.entries, navigator.onLine)
  }

  /** Reads the outbox after each status change; reads never overlap and the last one wins. */
  private readOutbox(): void {
    if (this.outboxReading) {
      this.outboxDirty = true
      return
    }
    this.outboxReading = true
    void (async () => {
      do {
        this.outboxDirty = false
        try {
          ;[this.entries, this.conflicts] = await Promise.all([this.sync.outbox(), this.sync.conflicts()])
        } catch {
          // closed or a transient IndexedDB failure: keep the last entries
        }
      } while (this.outboxDirty)
      this.outboxReading = false
      this.flagList.setPending(pendingKeys(this.entries))
      this.renderConflicts()
      const conflicted = new Set(this.conflicts.map((c) => c.recordId))
      if (this.status) this.syncView.render(this.status, this.entries, navigator.onLine, conflicted)
      this.syncView.setKeyProblem(this.keyProblem())
      if (this.status?.lastError?.status === 401) this.keyNeeded()
    })()
  }

  private renderStream(): void {
    const status = this.flags.status()
    let state: string
    let text: string
    if (!navigator.onLine) [state, text] = ['offline', 'Offline']
    else if (status.state === 'live') [state, text] = ['live', 'Live']
    else if (status.lastError?.status === 401) [state, text] = ['error', 'Key needed']
    else if (status.state === 'connecting') [state, text] = ['connecting', 'Connecting…']
    else if (status.state === 'polling') [state, text] = ['reconnecting', 'Polling']
    else [state, text] = ['reconnecting', 'Reconnecting…']
    this.stream.dataset.state = state
    this.stream.title =
      state === 'live' ? 'Receiving changes from the server as they happen' : (status.lastError?.message ?? text)
    const label = this.stream.querySelector('.stream-text')
    if (label) setText(label, text)
    this.syncView.setKeyProblem(this.keyProblem())
    if (status.lastError?.status === 401 && status.state !== 'live') this.keyNeeded()
    if (!this.flagList.ready) this.flagList.render()
  }

  /** The server answers 401 to this browser's key, or to no key: on the stream, or on a delivery. */
  private keyProblem(): KeyProblem {
    const stream = this.flags.status()
    const refused =
      (stream.lastError?.status === 401 && stream.state !== 'live') || this.status?.lastError?.status === 401
    if (!refused) return null
    return this.options.sdkKey === null ? 'needed' : 'rejected'
  }

  private keyNeeded(): void {
    this.keyButton.hidden = false
    if (this.askedForKey) return
    this.askedForKey = true
    this.askForKey()
  }

  private askForKey(): void {
    connectDialog({
      current: this.options.sdkKey,
      rejected: this.keyProblem() === 'rejected',
      save: (key) => this.options.saveSdkKey(key),
    })
  }

  private toast(text: string, tone: 'info' | 'error' = 'info'): void {
    clearTimeout(this.toastTimer)
    this.toastEl.dataset.tone = tone
    replaceChildren(this.toastEl, h('span', {}, text))
    this.toastEl.classList.add('is-visible')
    this.toastTimer = setTimeout(() => {
      this.toastEl.classList.remove('is-visible')
      this.toastTimer = setTimeout(() => replaceChildren(this.toastEl), 300)
    }, 4000)
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
