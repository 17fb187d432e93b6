import { openDatabase } from '@flagsync/store'
import { createApp, migrateAppTables } from './app.js'

const apiKey = process.env.API_KEY
if (!apiKey) {
  console.error('Set API_KEY: the sync client must send it as the X-Api-Key header.')
  process.exit(1)
}
const db = await openDatabase(process.env.DATABASE_URL ?? 'sqlite:./data/app.sqlite')
await migrateAppTables(db)
const port = Number(process.env.PORT ?? 3000)
const server = createApp({ db, apiKey }).listen(port, '127.0.0.1', () => {
  console.log(`receiver-standalone listening on http://127.0.0.1:${port} (POST /webhooks/flagsync)`)
})
process.on('SIGTERM', () => server.close(() => void db.close().then(() => process.exit(0))))
