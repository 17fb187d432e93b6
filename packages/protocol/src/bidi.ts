/**
 * Bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069). Text shown inside a sentence
 * ("Alice renamed Bob to …") with an unterminated U+202E reverses the rest of that sentence; right-to-left names and
 * values need none of them.
 */
export const BIDI_CONTROL = /[\u202A-\u202E\u2066-\u2069]/
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g

/**
 * `text` without bidirectional controls, for sentences built from stored names and values: the service refuses them
 * in names it is sent, but a flag's string value may hold them and so may a name stored before that rule existed.
 */
export function withoutBidiControls(text: string): string {
  return text.replace(BIDI_CONTROLS, '')
}
