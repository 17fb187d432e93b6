import { type DestinationStream, type Logger as PinoLogger, pino } from 'pino'

export type Logger = PinoLogger

export interface LoggerOptions {
  level?: string
  name?: string
}

/**
 * JSON logs; credentials are redacted wherever they appear in logged requests.
 * `destination` defaults to stdout; tests pass a memory stream to inspect what is logged.
 */
export function createLogger(options: LoggerOptions = {}, destination?: DestinationStream): Logger {
  const settings = {
    name: options.name ?? 'flagsync',
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'headers.authorization',
        'headers.cookie',
        'authorization',
        'cookie',
        'sdkKey',
        'token',
        'password',
        '*.sdkKey',
        '*.token',
        '*.password',
      ],
      censor: '[redacted]',
    },
  }
  return destination ? pino(settings, destination) : pino(settings)
}

/** A logger that drops everything, for tests and embedding. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' })
}
