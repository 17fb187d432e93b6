import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './app.js'
import './styles.css'

const root = document.getElementById('root')
if (!root) throw new Error('index.html has no #root')
// One client for the pages that keep server state in TanStack Query (webhooks); the rest fetch on their own.
const queryClient = new QueryClient({ defaultOptions: { queries: { retry: 1, refetchOnWindowFocus: false } } })
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <App />
    </QueryClientProvider>
  </StrictMode>,
)

// The shell works offline once the worker has cached it (public/sw.js); data comes from the page's own caches.
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.register('/sw.js').catch((error: unknown) => {
    console.warn('service worker not registered:', error)
  })
}
