// Type-aware checks that Biome cannot make (it has no type information): promises that are neither awaited nor
// handled, promises passed where a callback's result is ignored, and switches that miss a member of a union.
// Everything else is Biome's (`npm run lint`). `npx eslint` lints the packages' sources.
import { defineConfig } from 'eslint/config'
import tseslint from 'typescript-eslint'

export default defineConfig(
  { ignores: ['**/dist/**', '**/node_modules/**'] },
  {
    files: ['packages/*/src/**/*.{ts,tsx}'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // React ignores what an event handler returns; the dashboard's async handlers catch and show their own
      // errors, and no-floating-promises still checks what they call. Every other void callback is checked.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { attributes: false } }],
      // A `default:` is a decision about the members not listed; a switch without one must list them all.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
    },
  },
)
