// The rule lives in the protocol package, so browsers (the dashboard) derive the same slugs without the server.
export { slugify } from '@flagsync/protocol'

/** Environment slugs are given, not derived: lowercase alphanumerics and hyphens, 1 to 64 characters. */
export const ENVIRONMENT_SLUG_PATTERN = /^[a-z0-9-]+$/
