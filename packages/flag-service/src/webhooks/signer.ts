import { createHmac, randomBytes, randomUUID } from 'node:crypto'

// Standard Webhooks (https://www.standardwebhooks.com) signing, pure: no I/O, no clock.

const SECRET_PREFIX = 'whsec_'

/** A new signing secret: `whsec_` and the base64 of 32 random bytes (the spec asks for 24 to 64). */
export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`
}

/** A new message id (the `webhook-id` header): unique per message, kept across its retries. */
export function generateMessageId(): string {
  return `msg_${randomUUID().replaceAll('-', '')}`
}

/** `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the secret's decoded bytes. */
function signatureOf(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64')
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')
  return `v1,${mac}`
}

/** The headers of one attempt: signed at `nowMs`, so a retry carries a fresh timestamp and signature. */
export function signedHeaders(secret: string, id: string, nowMs: number, body: string): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000)
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureOf(secret, id, timestamp, body),
  }
}
