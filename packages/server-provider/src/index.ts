export { FlagsyncServerProvider, type FlagsyncServerProviderOptions } from './provider.js'
export { StreamHttpError } from './read-stream.js'
