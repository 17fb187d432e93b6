import { PersistQueryClientProvider } from '@tanstack/react-query-persist-client'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './app.js'
import { createQueryClient, persistOptions } from './query-client.js'
import './styles.css'

const root = document.getElementById('root')
if (!root) throw new Error('index.html has no #root')
// Server state lives in TanStack Query; the persister keeps it in localStorage so an offline start shows it.
const queryClient = createQueryClient()
createRoot(root).render(
  <StrictMode>
    <PersistQueryClientProvider client={queryClient} persistOptions={persistOptions(window.localStorage)}>
      <App />
    </PersistQueryClientProvider>
  </StrictMode>,
)

// The shell works offline once the worker has cached it (public/sw.js); data comes from the persisted query cache.
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.register('/sw.js').catch((error: unknown) => {
    console.warn('service worker not registered:', error)
  })
}
