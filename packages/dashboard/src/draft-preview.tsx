import { useDeferredValue, useMemo } from 'react'
import { errorText } from './api.js'
import { CodeText } from './code-text.js'
import type { BuiltFlag } from './flag-draft.js'
import { type DecidingFlag, decisionText, type Evaluated, loadTestContext } from './test-context.js'
import { useEvaluation } from './use-evaluate.js'

/**
 * "Your test user, now and with this edit": the context last used in "Test a
 * user" for this environment, evaluated by the service against the saved flag
 * and against the draft in its place (`flags: [draft]`, nothing saved), so an
 * edit's effect shows before it is saved.
 */
export function DraftPreview(props: { envId: string; saved: BuiltFlag | null; draft: BuiltFlag; blocked: boolean }) {
  const context = useMemo(() => loadTestContext(props.envId), [props.envId])
  // Typing in the editor re-renders at once; the comparison follows a moment later.
  const draft = useDeferredValue(props.draft)
  const key = props.draft.key
  const now = useEvaluation(props.envId, context ? { context, keys: [key] } : null)
  const next = useEvaluation(props.envId, context && !props.blocked ? { context, keys: [key], flags: [draft] } : null)
  if (!context) {
    return (
      <p className="hint" id="draft-preview">
        Set a test user in the project's “Test a user” tab to see here what they get now and with this edit.
      </p>
    )
  }
  const before = now.data?.flags[0]
  const after = next.data?.flags[0]
  const changed = before && after && JSON.stringify(before.value) !== JSON.stringify(after.value)
  return (
    <section className="draft-preview" id="draft-preview" aria-label="Test user, now and with this edit">
      <h3>
        Test user {typeof context.user_id === 'string' || typeof context.user_id === 'number' ? context.user_id : ''}
      </h3>
      <dl aria-live="polite">
        <PreviewLine label="Now" entry={before} flag={props.saved ?? undefined} error={now.error} />
        <PreviewLine
          label="With this edit"
          entry={props.blocked ? undefined : after}
          flag={props.draft}
          error={props.blocked ? 'fix the problems below first' : next.error}
        />
      </dl>
      {before && after ? (
        <p className={changed ? 'notice' : 'hint'} data-changed={String(Boolean(changed))}>
          {changed
            ? 'This edit changes what the test user gets.'
            : 'This edit does not change what the test user gets.'}
        </p>
      ) : null}
    </section>
  )
}

function PreviewLine(props: {
  label: string
  entry: Evaluated | undefined
  flag: DecidingFlag | undefined
  error: unknown
}) {
  const { entry } = props
  return (
    <>
      <dt>{props.label}</dt>
      <dd data-preview={props.label === 'Now' ? 'now' : 'draft'}>
        {entry ? (
          <>
            <code className="preview-value">{JSON.stringify(entry.value)}</code> ({entry.reason.toLowerCase()},{' '}
            <CodeText text={decisionText(entry, props.flag)} />)
          </>
        ) : props.error ? (
          <span className="error">{typeof props.error === 'string' ? props.error : errorText(props.error)}</span>
        ) : (
          '…'
        )}
      </dd>
    </>
  )
}
