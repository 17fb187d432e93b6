import { config } from 'zod/mini'
import en from 'zod/v4/locales/en.js'

/**
 * Makes every schema failure carry zod's English messages
 * (`Invalid input: expected boolean, received string`) instead of the bare
 * `Invalid input` that `zod/mini` reports with no locale loaded. Servers call
 * it once (server-kit does, on import) so the `issues` they answer stay
 * readable; browser code skips it and saves the locale's ~1.3 kB gz. A locale
 * configured before, by the app or by classic `zod`, is kept.
 */
export function enableEnglishMessages(): void {
  if (config().localeError === undefined) config(en())
}
