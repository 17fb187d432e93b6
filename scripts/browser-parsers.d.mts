/** Absolute path of the generated module (packages/protocol/src/browser-parsers.ts). */
export const OUTPUT: string
/** What the browser parses: the exported function, the schema it is compiled from, and the module defining it. */
export const TARGETS: ReadonlyArray<{ name: string; schema: string; from: string; what: string }>
/** The module text the protocol package's exported schemas compile to; throws on a feature it does not compile. */
export function generateBrowserParsers(schemas: Record<string, unknown>): string
