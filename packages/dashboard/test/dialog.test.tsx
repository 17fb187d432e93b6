// @vitest-environment happy-dom

import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { StrictMode, useState } from 'react'
import { afterEach, describe, expect, it } from 'vitest'
import { ConfirmDialog, Dialog, FormDialog } from '../src/dialog.js'

afterEach(cleanup)

/** A page with a button that opens the dialog `make` returns, counting how often it was asked to close. */
function Opener(props: { make: (close: () => void) => React.ReactNode; closes: { count: number } }) {
  const [open, setOpen] = useState(false)
  const close = () => {
    props.closes.count++
    setOpen(false)
  }
  return (
    <>
      <button type="button" onClick={() => setOpen(true)}>
        Open
      </button>
      {open ? props.make(close) : null}
    </>
  )
}

/** A form whose submit is refused until the name is "ok". */
const attempts = { count: 0 }
function Form(props: { close: () => void }) {
  const [name, setName] = useState('')
  return (
    <FormDialog
      title="New thing"
      submit="Create thing"
      onClose={props.close}
      onSubmit={async () => {
        attempts.count++
        if (name !== 'ok') throw new Error(`refused ${name}`)
        props.close()
      }}
    >
      <label>
        Name
        <input value={name} onChange={(e) => setName(e.target.value)} />
      </label>
    </FormDialog>
  )
}
const settle = () => act(async () => new Promise((resolve) => setTimeout(resolve, 20)))

describe.each([
  ['StrictMode', true],
  ['a plain root', false],
])('Dialog under %s', (_name, strict) => {
  const mount = (node: React.ReactNode) => render(strict ? <StrictMode>{node}</StrictMode> : node)

  it('opens once as a modal and stays open (no stray close from the rehearsed effect)', async () => {
    const closes = { count: 0 }
    mount(
      <Opener
        closes={closes}
        make={(close) => (
          <Dialog title="Hello" onClose={close}>
            <p>Body</p>
          </Dialog>
        )}
      />,
    )
    const opener = screen.getByRole('button', { name: 'Open' })
    opener.focus()
    fireEvent.click(opener)
    await settle()
    const dialog = document.querySelector('dialog')
    expect(dialog?.open).toBe(true)
    expect(closes.count).toBe(0)
    expect(screen.getByText('Body')).toBeTruthy()
  })

  it('closes with its Close button once, and focus returns to the opener', async () => {
    const closes = { count: 0 }
    mount(
      <Opener
        closes={closes}
        make={(close) => (
          <Dialog title="Hello" onClose={close}>
            x
          </Dialog>
        )}
      />,
    )
    const opener = screen.getByRole('button', { name: 'Open' })
    opener.focus()
    fireEvent.click(opener)
    await settle()
    ;(document.querySelector('dialog button[aria-label="Close"]') as HTMLButtonElement).focus()
    fireEvent.click(screen.getByRole('button', { name: 'Close' }))
    await settle()
    expect(document.querySelector('dialog')).toBeNull()
    expect(closes.count).toBe(1)
    expect(document.activeElement).toBe(opener)
  })

  it('Escape (cancel) asks the parent to close once', async () => {
    const closes = { count: 0 }
    mount(
      <Opener
        closes={closes}
        make={(close) => (
          <Dialog title="Hello" onClose={close}>
            x
          </Dialog>
        )}
      />,
    )
    fireEvent.click(screen.getByRole('button', { name: 'Open' }))
    await settle()
    const dialog = document.querySelector('dialog') as HTMLDialogElement
    const cancel = new Event('cancel', { cancelable: true })
    act(() => {
      dialog.dispatchEvent(cancel)
    })
    await settle()
    expect(cancel.defaultPrevented).toBe(true)
    expect(closes.count).toBe(1)
    expect(document.querySelector('dialog')).toBeNull()
  })

  it('ConfirmDialog: Cancel closes, the confirm button runs the action', async () => {
    const closes = { count: 0 }
    let confirmed = 0
    mount(
      <Opener
        closes={closes}
        make={(close) => (
          <ConfirmDialog title="Delete x?" confirm="Delete x" onClose={close} onConfirm={() => void confirmed++}>
            <p>It goes.</p>
          </ConfirmDialog>
        )}
      />,
    )
    fireEvent.click(screen.getByRole('button', { name: 'Open' }))
    await settle()
    fireEvent.click(screen.getByRole('button', { name: 'Delete x' }))
    expect(confirmed).toBe(1)
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }))
    await settle()
    expect(closes.count).toBe(1)
    expect(document.querySelector('dialog')).toBeNull()
  })

  it('ConfirmDialog: a failing action shows its error in the dialog, which stays open', async () => {
    const closes = { count: 0 }
    mount(
      <Opener
        closes={closes}
        make={(close) => (
          <ConfirmDialog
            title="Revoke k?"
            confirm="Revoke key"
            onClose={close}
            onConfirm={async () => {
              throw new Error('cannot delete the last SDK key')
            }}
          >
            <p>Apps get 401.</p>
          </ConfirmDialog>
        )}
      />,
    )
    fireEvent.click(screen.getByRole('button', { name: 'Open' }))
    await settle()
    fireEvent.click(screen.getByRole('button', { name: 'Revoke key' }))
    await settle()
    expect(screen.getByRole('alert').textContent).toBe('cannot delete the last SDK key')
    expect(document.querySelector('dialog')?.open).toBe(true)
    expect(closes.count).toBe(0)
  })

  it('FormDialog: a failing submit shows the error and keeps what was typed; a good one closes', async () => {
    const closes = { count: 0 }
    attempts.count = 0
    mount(<Opener closes={closes} make={(close) => <Form close={close} />} />)
    fireEvent.click(screen.getByRole('button', { name: 'Open' }))
    await settle()
    fireEvent.change(screen.getByLabelText('Name'), { target: { value: 'bad' } })
    fireEvent.click(screen.getByRole('button', { name: 'Create thing' }))
    await settle()
    expect(screen.getByRole('alert').textContent).toBe('refused bad')
    expect((screen.getByLabelText('Name') as HTMLInputElement).value).toBe('bad')
    expect(document.querySelector('dialog')?.open).toBe(true)
    fireEvent.change(screen.getByLabelText('Name'), { target: { value: 'ok' } })
    fireEvent.click(screen.getByRole('button', { name: 'Create thing' }))
    await settle()
    expect(attempts.count).toBe(2)
    expect(closes.count).toBe(1)
    expect(document.querySelector('dialog')).toBeNull()
  })
})
