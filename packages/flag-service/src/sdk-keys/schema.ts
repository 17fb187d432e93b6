import { z } from 'zod'
import { SDK_KEY_KINDS } from '../auth/secrets.js'
import { nameSchema } from '../schemas.js'

export const createSdkKeySchema = z.strictObject({
  name: nameSchema,
  environment_id: z.string().max(36),
  /** 'server' (sk_live_…, admin of the project) or 'client' (pk_live_…, may be shown in a page). */
  kind: z.enum(SDK_KEY_KINDS).default('server'),
})
