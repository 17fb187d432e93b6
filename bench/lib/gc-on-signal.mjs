// Preloaded (with --expose-gc) into measured server processes: SIGUSR2 runs a full GC, so the RSS read
// afterwards counts live memory rather than garbage a collection has not reached yet. The server code is untouched.
process.on('SIGUSR2', () => {
  globalThis.gc?.()
  globalThis.gc?.()
})
