import { type FormEvent, useState, useSyncExternalStore } from 'react'
import { ApiError, errorText } from './api.js'
import { CodeText } from './code-text.js'
import { type ContextDraft, ContextEditor, contextDraftOf, readContextDraft } from './context-editor.js'
import { EnvironmentSelect } from './environment-select.js'
import { ErrorLine } from './error-line.js'
import type { LiveFlags } from './live-flags.js'
import { decisionText, type Evaluated, loadTestContext, saveTestContext } from './test-context.js'
import type { Environment, Flag } from './types.js'
import { useEvaluate } from './use-evaluate.js'

/**
 * "Test a user": a context typed as attributes (or JSON), evaluated by the
 * service against every flag of one environment, each answer with what
 * decided it in words. The context is kept per environment in this browser.
 */
export function TestUser(props: { environments: Environment[]; live: LiveFlags; offline: boolean }) {
  const first = props.environments.find((e) => e.is_default) ?? props.environments[0]
  const [envId, setEnvId] = useState<string | undefined>(first?.id)
  const env = props.environments.find((e) => e.id === envId) ?? first
  return (
    <section aria-labelledby="test-user-title" className="test-user">
      <div className="toolbar">
        <h2 id="test-user-title">Test a user</h2>
      </div>
      <p className="hint">
        What each flag serves one user, and why, evaluated by the service exactly as SDKs evaluate it. The context is
        kept in this browser for each environment.
      </p>
      {env ? (
        <>
          <EnvironmentSelect label="Environment" value={env.id} environments={props.environments} onChange={setEnvId} />
          <TestUserForm key={env.id} env={env} live={props.live} offline={props.offline} />
        </>
      ) : (
        <p className="hint">This project has no environments.</p>
      )}
    </section>
  )
}

function TestUserForm(props: { env: Environment; live: LiveFlags; offline: boolean }) {
  const { env } = props
  const [draft, setDraft] = useState<ContextDraft>(() => contextDraftOf(loadTestContext(env.id) ?? {}))
  const [shownError, setShownError] = useState<{ text: string; row?: number } | null>(null)
  const evaluation = useEvaluate(env.id)
  const change = (next: ContextDraft) => {
    setDraft(next)
    setShownError(null)
    evaluation.reset()
    const read = readContextDraft(next)
    if ('context' in read) saveTestContext(env.id, read.context)
  }
  const submit = (event: FormEvent) => {
    event.preventDefault()
    const read = readContextDraft(draft)
    if ('error' in read) {
      setShownError({ text: read.error, row: read.row })
      return
    }
    evaluation.mutate({ context: read.context })
  }
  // The service's 422 is about the context: shown next to it; anything else (offline, 403) above the answers.
  const refused = evaluation.error instanceof ApiError && evaluation.error.status === 422 ? evaluation.error : null
  const contextError = shownError ?? (refused ? { text: errorText(refused) } : null)
  return (
    <form onSubmit={submit} className="test-user-form">
      <ContextEditor draft={draft} onChange={change} error={contextError} />
      <div className="actions">
        <button type="submit" className="primary" disabled={props.offline || evaluation.isPending}>
          Evaluate
        </button>
        {props.offline ? <span className="hint">Evaluating needs the service (offline).</span> : null}
      </div>
      <ErrorLine errors={[refused ? null : evaluation.error]} />
      {evaluation.data ? <Answers env={env} live={props.live} answers={evaluation.data.flags} /> : null}
    </form>
  )
}

/** Every flag's answer: value, variant, reason, and the rule or bucket that decided it. */
function Answers(props: { env: Environment; live: LiveFlags; answers: Evaluated[] }) {
  const snapshot = useSyncExternalStore(props.live.subscribe, props.live.getSnapshot)
  const flags = snapshot.flags.get(props.env.id)
  return (
    // Focusable, so a keyboard can scroll the answers sideways on a phone.
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard
    <section className="table-wrap" tabIndex={0} aria-labelledby="answers-caption">
      <table className="answers" aria-live="polite">
        <caption id="answers-caption">
          What this user gets in {props.env.name} ({props.answers.length} flag{props.answers.length === 1 ? '' : 's'})
        </caption>
        <thead>
          <tr>
            <th scope="col">Flag</th>
            <th scope="col">Value</th>
            <th scope="col">Variant</th>
            <th scope="col">Reason</th>
            <th scope="col">Why</th>
          </tr>
        </thead>
        <tbody>
          {props.answers.map((a) => (
            <AnswerRow key={a.key} answer={a} flag={flags?.get(a.key)} />
          ))}
        </tbody>
      </table>
    </section>
  )
}

function AnswerRow(props: { answer: Evaluated; flag: Flag | undefined }) {
  const { answer } = props
  return (
    <tr data-answer={answer.key} data-reason={answer.reason}>
      <th scope="row">{answer.key}</th>
      <td className="answer-value" data-label="Value" data-value={JSON.stringify(answer.value)}>
        <code>{JSON.stringify(answer.value)}</code>
      </td>
      <td data-label="Variant">{answer.variant === null ? '—' : Number(answer.variant) + 1}</td>
      <td data-label="Reason">{answer.reason}</td>
      <td className="answer-why" data-label="Why">
        <CodeText text={decisionText(answer, props.flag)} />
      </td>
    </tr>
  )
}
