import { type DestinationStream, type Logger as PinoLogger, pino } from 'pino'
import { ConfigError, type Env } from './config-env.js'

export type Logger = PinoLogger

export interface LoggerOptions {
  level?: string
  name?: string
}

/** pino's levels, quietest last: the values LOG_LEVEL accepts. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

/**
 * The log level LOG_LEVEL asks for (default `info`; case and spaces ignored).
 * @throws ConfigError naming LOG_LEVEL and the allowed values: pino's own error was a stack trace.
 */
export function logLevelFromEnv(env: Env = process.env): string {
  const raw = env.LOG_LEVEL
  if (raw === undefined || raw.trim() === '') return 'info'
  return checkLevel(raw, 'LOG_LEVEL')
}

function checkLevel(raw: string, name: string): string {
  const level = raw.trim().toLowerCase()
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new ConfigError(`${name} must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(raw)})`)
  }
  return level
}

/**
 * JSON logs; credentials are redacted wherever they appear in logged requests.
 * `destination` defaults to stdout; tests pass a memory stream to inspect what is logged.
 * @throws ConfigError for a level (given, or LOG_LEVEL's) that is not one of LOG_LEVELS.
 */
export function createLogger(options: LoggerOptions = {}, destination?: DestinationStream): Logger {
  const settings = {
    name: options.name ?? 'flagsync',
    level: options.level === undefined ? logLevelFromEnv() : checkLevel(options.level, 'the log level'),
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'headers.authorization',
        'headers.cookie',
        'authorization',
        'cookie',
        'req.headers["x-api-key"]',
        'headers["x-api-key"]',
        'sdkKey',
        'clientKey',
        'token',
        'password',
        '*.sdkKey',
        '*.clientKey',
        '*.token',
        '*.password',
      ],
      censor: '[redacted]',
    },
  }
  return destination ? pino(settings, destination) : pino(settings)
}

/**
 * The logger of a command-line server: a malformed LOG_LEVEL is reported in one line (at error level, naming the
 * variable) and the process exits 1, before anything else starts.
 */
export function cliLogger(name: string): Logger {
  try {
    return createLogger({ name })
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    createLogger({ name, level: 'error' }).error(error.message)
    process.exit(1)
  }
}

/** A logger that drops everything, for tests and embedding. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' })
}
