/** Letters NFKD does not decompose into a base letter plus marks. */
const LIGATURES: Record<string, string> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', đ: 'd', ł: 'l', þ: 'th', ð: 'd' }

/** The longest slug `slugify` returns and the flag service accepts. */
export const SLUG_MAX_LENGTH = 64

/**
 * The project slug rule (the flag service derives project slugs with it; the
 * dashboard proposes environment slugs with it, in the browser, so it lives
 * here rather than in the service): NFKD-normalize, drop diacritics, lowercase, spell out
 * a few ligatures, turn every run of other characters into one hyphen, trim
 * hyphens, cut to 64 characters (and trim again). `Café Déjà Vu!` → `cafe-deja-vu`.
 * May return '' (a name of only symbols or non-Latin script): the caller refuses it.
 */
export function slugify(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[ßæœøđłþð]/g, (c) => LIGATURES[c] ?? c)
  return base
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, SLUG_MAX_LENGTH)
    .replace(/-+$/, '')
}
