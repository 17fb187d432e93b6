// Service worker of the flag console: keeps the app shell so the page opens and
// reloads without a network. Data never goes through here: the API, the stream
// and the receiver are always fetched from the network, and the page keeps its
// own data (flags and queued edits) in IndexedDB.
//
// The build replaces __SHELL_VERSION__ with a hash of the shell files, so a new
// build installs a new cache and removes the old one.

const VERSION = '__SHELL_VERSION__'
const CACHE = `flagsync-console-${VERSION}`
const SHELL = ['./', 'index.html', 'app.js', 'styles.css', 'icon.svg', 'manifest.webmanifest']
const NEVER_CACHED = ['/api/', '/stream', '/sync', '/health']

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL.map((path) => new Request(path, { cache: 'reload' }))))
      .then(() => self.skipWaiting()),
  )
})

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) =>
        Promise.all(keys.filter((k) => k.startsWith('flagsync-console-') && k !== CACHE).map((k) => caches.delete(k))),
      )
      .then(() => self.clients.claim()),
  )
})

self.addEventListener('fetch', (event) => {
  const request = event.request
  if (request.method !== 'GET') return
  const url = new URL(request.url)
  if (url.origin !== self.location.origin) return
  const scope = new URL(self.registration.scope)
  const path = url.pathname.slice(scope.pathname.length - 1)
  if (NEVER_CACHED.some((prefix) => path === prefix || path.startsWith(prefix))) return

  // The shell is versioned with this worker: cache first, the network only for what it lacks.
  const shellPath = request.mode === 'navigate' && (path === '/' || path === '/index.html') ? 'index.html' : null
  event.respondWith(
    caches
      .open(CACHE)
      .then((cache) => cache.match(shellPath ?? request, { ignoreSearch: true }))
      .then((cached) => cached ?? fetch(request)),
  )
})
