// Service worker of the dashboard: keeps the app shell (index.html and the built assets, listed by the build in
// shell.json) so the dashboard opens without a network. Data never goes through here: the API and the stream are
// always fetched from the network; the page keeps its own offline copy of projects and flags.
const CACHE_PREFIX = 'flagsync-dashboard-'
const NEVER_CACHED = ['/api/', '/stream', '/flags/', '/health']

self.addEventListener('install', (event) => {
  event.waitUntil(
    fetch('/shell.json', { cache: 'reload' })
      .then((res) => res.json())
      .then(async (files) => {
        // The list names hashed files, so it is its own version: a new build gets a new cache.
        const cache = await caches.open(`${CACHE_PREFIX}${await digest(files.join('\n'))}`)
        await cache.addAll(files.map((path) => new Request(path, { cache: 'reload' })))
      })
      .then(() => self.skipWaiting()),
  )
})

self.addEventListener('activate', (event) => {
  event.waitUntil(
    fetch('/shell.json', { cache: 'no-store' })
      .then((res) => res.json())
      .then((files) => digest(files.join('\n')))
      .catch(() => null)
      .then((current) =>
        caches
          .keys()
          .then((keys) =>
            Promise.all(
              keys
                .filter((k) => k.startsWith(CACHE_PREFIX) && current !== null && k !== `${CACHE_PREFIX}${current}`)
                .map((k) => caches.delete(k)),
            ),
          ),
      )
      // A navigation's network request starts while the worker is still starting up (`preloadResponse`).
      .then(() => self.registration.navigationPreload?.enable())
      .then(() => self.clients.claim()),
  )
})

self.addEventListener('fetch', (event) => {
  const request = event.request
  if (request.method !== 'GET') return
  const url = new URL(request.url)
  if (url.origin !== self.location.origin) return
  if (NEVER_CACHED.some((prefix) => url.pathname === prefix || url.pathname.startsWith(prefix))) return
  // Navigations: the network's index.html (preloaded), else the shell's; the app routes on the client.
  if (request.mode === 'navigate') {
    event.respondWith(
      Promise.resolve(event.preloadResponse)
        .then((preloaded) => preloaded ?? fetch(request))
        .catch(() => newestShell()),
    )
    return
  }
  // Assets have hashed names: whichever cache holds one holds the right bytes, in one lookup across the caches.
  event.respondWith(caches.match(request, { ignoreSearch: true }).then((hit) => hit ?? fetch(request)))
})

/** index.html of the newest cache (offline navigations); an error response when no cache has one. */
async function newestShell() {
  for (const name of (await caches.keys()).filter((k) => k.startsWith(CACHE_PREFIX)).reverse()) {
    const hit = await (await caches.open(name)).match('/')
    if (hit) return hit
  }
  return Response.error()
}

async function digest(text) {
  const bytes = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))
  return [...new Uint8Array(bytes)]
    .slice(0, 8)
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('')
}
