// Preload (node --require) that makes the modules named in FLAGSYNC_HIDE_MODULES (comma-separated) unresolvable,
// as on a machine where they were never installed; only require()-style resolution is affected.
const Module = require('node:module')
const hidden = new Set((process.env.FLAGSYNC_HIDE_MODULES ?? '').split(',').filter(Boolean))
const resolve = Module._resolveFilename
Module._resolveFilename = function (request, ...rest) {
  if (hidden.has(request)) {
    const error = new Error(`Cannot find module '${request}'`)
    error.code = 'MODULE_NOT_FOUND'
    throw error
  }
  return resolve.call(this, request, ...rest)
}
