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
        const version = files.join('|').length.toString(36) + files.filter((f) => f.includes('-')).join('').length
        const cache = await caches.open(`${CACHE_PREFIX}${await digest(files.join('\n'))}${version ? '' : ''}`)
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
      .then(() => self.clients.claim()),
  )
})

self.addEventListener('fetch', (event) => {
  const request = event.request
  if (request.method !== 'GET') return
  const url = new URL(request.url)
  if (url.origin !== self.location.origin) return
  if (NEVER_CACHED.some((prefix) => url.pathname === prefix || url.pathname.startsWith(prefix))) return
  // Navigations get the shell's index.html (the app routes on the client); assets come from the cache first.
  const key = request.mode === 'navigate' ? '/' : request
  event.respondWith(
    caches.keys().then(async (keys) => {
      for (const name of keys.filter((k) => k.startsWith(CACHE_PREFIX)).reverse()) {
        const hit = await (await caches.open(name)).match(key, { ignoreSearch: true })
        if (hit) return request.mode === 'navigate' ? fetch(request).catch(() => hit) : hit
      }
      return fetch(request)
    }),
  )
})

async function digest(text) {
  const bytes = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))
  return [...new Uint8Array(bytes)]
    .slice(0, 8)
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('')
}
