export type { ServerImpressionOptions, ServerImpressionStatus } from './impressions.js'
export { FlagsyncServerProvider, type FlagsyncServerProviderOptions } from './provider.js'
export { StreamHttpError } from './read-stream.js'
