import type { ImpressionOptions } from '../types.js'
import { MemoryImpressionQueue } from './impression-queue.js'
import { ImpressionReporter, type ReporterDeps } from './impression-reporter.js'
import { IndexedDbImpressionQueue } from './indexeddb-queue.js'

/** The options both flag clients read for their impressions. */
export interface ClientReporterOptions {
  impressions?: boolean | ImpressionOptions | undefined
  dbName?: string | undefined
  indexedDB?: IDBFactory | undefined
  IDBKeyRange?: typeof IDBKeyRange | undefined
}

/**
 * A flag client's impression reporter, both modes alike: the `impressions` option (`false`: off; its `baseUrl`, else
 * `service` resolved against `base`, is where the flag service is), queued in IndexedDB (`<dbName>:impressions`, the
 * options' or the page's; in memory where there is none).
 * @example
 * const reporter = clientReporter(options, options.sdkKey, ['.', streamUrl], { environmentId, onError, fetch, clock, random, online })
 */
export function clientReporter(
  options: ClientReporterOptions,
  sdkKey: string | undefined,
  [service, base]: [string, URL],
  deps: Omit<ReporterDeps, 'options' | 'sdkKey' | 'baseUrl' | 'queue'>,
): ImpressionReporter {
  const given = typeof options.impressions === 'object' ? options.impressions : {}
  return new ImpressionReporter({
    ...deps,
    options: options.impressions === false ? { ...given, enabled: false } : given,
    sdkKey,
    baseUrl: new URL(given.baseUrl?.replace(/\/?$/, '/') ?? service, base),
    queue: () =>
      options.indexedDB || (globalThis as { indexedDB?: unknown }).indexedDB
        ? new IndexedDbImpressionQueue(
            `${options.dbName ?? 'flagsync'}:impressions`,
            options.indexedDB,
            options.IDBKeyRange,
          )
        : new MemoryImpressionQueue(),
  })
}
