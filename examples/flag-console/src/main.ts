/**
 * The flag console's entry point. Same-origin configuration: edits go to the
 * server's receiver at /sync, live flags come from /stream. When the server
 * runs with SDK_KEY, the page asks for the key once and keeps it in this
 * browser (localStorage).
 */
import { createFlagClient } from '@flagsync/flag-client'
import { createSyncClient } from '@flagsync/sync-client'
import { ConsoleApp } from './app.js'

const KEY_STORAGE = 'flagsync.console.sdkKey'
const NAME_STORAGE = 'flagsync.console.editorName'

function stored(name: string): string | null {
  try {
    return localStorage.getItem(name)
  } catch {
    return null
  }
}

const sdkKey = stored(KEY_STORAGE)
const editorName = stored(NAME_STORAGE)
const origin = location.origin

const sync = createSyncClient({
  webhookUrl: `${origin}/sync`,
  headers: (): Record<string, string> => (sdkKey ? { Authorization: `Bearer ${sdkKey}` } : {}),
  // The audit trail names the editor of each change (as declared by this browser).
  ...(editorName ? { actor: editorName } : {}),
})
const flags = createFlagClient({
  streamUrl: `${origin}/stream`,
  ...(sdkKey ? { sdkKey } : {}),
  syncClient: sync,
  // The console is usually on the same network as its server: come back quickly after an outage.
  reconnect: { maxMs: 5000 },
})

new ConsoleApp({
  flags,
  sync,
  sdkKey,
  saveSdkKey(key) {
    if (key === null) localStorage.removeItem(KEY_STORAGE)
    else localStorage.setItem(KEY_STORAGE, key)
    location.reload()
  },
  editorName,
  saveEditorName(name) {
    localStorage.setItem(NAME_STORAGE, name)
    location.reload()
  },
}).start()
sync.start()

// The app shell is cached by the service worker, so the page also opens (and reloads) offline.
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.register('sw.js').catch((error: unknown) => {
    console.warn('flag console: no offline support, the service worker failed to register', error)
  })
}
