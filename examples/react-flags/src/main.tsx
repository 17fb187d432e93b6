/**
 * Same-origin configuration, as the flat API server serves this app (CONSOLE_DIR):
 * flags stream from /stream, edits go through the outbox to the receiver at /sync.
 * The clients live for the page's lifetime, so they are created once, here.
 */
import { FlagsyncProvider } from '@flagsync/react'
import { createFlagClient, createSyncClient } from '@flagsync/sync-client'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './app.js'

const sync = createSyncClient({ webhookUrl: `${location.origin}/sync` })
const flags = createFlagClient({
  streamUrl: `${location.origin}/stream`,
  syncClient: sync,
  reconnect: { maxMs: 5000 },
})
sync.start()

const user = new URLSearchParams(location.search).get('user') ?? 'guest'
const root = document.getElementById('root')
if (!root) throw new Error('index.html has no #root')
createRoot(root).render(
  <StrictMode>
    <FlagsyncProvider client={flags} syncClient={sync}>
      <App user={user} />
    </FlagsyncProvider>
  </StrictMode>,
)
