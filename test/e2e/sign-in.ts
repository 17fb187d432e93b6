import type { Page } from 'playwright-core'
import type { Credentials } from './service-harness.js'

/**
 * Signs in through the dashboard's form, as a person does, and waits for the signed-in shell (its Sign out button),
 * so the next step starts from a page that has the session.
 */
export async function signIn(page: Page, url: string, who: Credentials): Promise<void> {
  await page.goto(url)
  await page.getByLabel('Email').fill(who.email)
  await page.getByLabel('Password').fill(who.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('button', { name: 'Sign out' }).waitFor()
}
