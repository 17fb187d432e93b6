import { ApiError, errorText } from './api.js'

/**
 * The first failure among `errors` as an alert: the service's own words (its
 * `error`, the fields a 422 names) and its `code`, so the reader knows what
 * happened and what to try. Nothing when none failed.
 */
export function ErrorLine(props: { errors: readonly unknown[] }) {
  const error = props.errors.find((e) => e !== null && e !== undefined)
  if (error === undefined) return null
  const code = error instanceof ApiError ? error.body.code : undefined
  return (
    <p role="alert" className="error" data-code={code}>
      {errorText(error)}
      {code ? <span className="hint"> ({code})</span> : null}
    </p>
  )
}
