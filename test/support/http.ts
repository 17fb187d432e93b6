/** Parsed JSON as tests read it (`any`, as `Response.json()` gives): bodies are checked field by field. */
// biome-ignore lint/suspicious/noExplicitAny: see above
export type Json = any

export interface Reply {
  status: number
  headers: Headers
  body: Json
}

/** A response's status, headers and body: parsed when its Content-Type says JSON, else the text as it came. */
export async function readReply(res: Response): Promise<Reply> {
  const text = await res.text()
  return {
    status: res.status,
    headers: res.headers,
    body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text,
  }
}
