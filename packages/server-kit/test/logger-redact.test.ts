import { Writable } from 'node:stream'
import { createLogger } from '@flagsync/server-kit'
import { describe, expect, it } from 'vitest'

describe('createLogger', () => {
  it('redacts both keys of a server and the X-API-Key header wherever they are logged', () => {
    let out = ''
    const sink = new Writable({
      write(chunk, _encoding, done) {
        out += chunk
        done()
      },
    })
    const logger = createLogger({ level: 'info' }, sink)
    logger.info(
      {
        sdkKey: 'sk_secret_1',
        clientKey: 'pk_secret_2',
        config: { clientKey: 'pk_secret_3' },
        req: { headers: { 'x-api-key': 'pk_secret_4', authorization: 'Bearer sk_secret_5' } },
      },
      'settings',
    )
    expect(out).toContain('[redacted]')
    expect(out).not.toMatch(/secret_\d/)
  })
})
