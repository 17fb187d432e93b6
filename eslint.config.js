// Type-aware checks that Biome cannot make (it has no type information): promises that are neither awaited nor
// handled, promises passed where a callback's result is ignored, and switches that miss a member of a union.
// Everything else is Biome's. `npm run lint` runs both; `npx eslint packages/flag-service/src` checks one folder.
import { defineConfig } from 'eslint/config'
import tseslint from 'typescript-eslint'

const rules = {
  '@typescript-eslint/no-floating-promises': 'error',
  // React ignores what an event handler returns; the dashboard's async handlers catch and show their own
  // errors, and no-floating-promises still checks what they call. Every other void callback is checked.
  '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { attributes: false } }],
  // A `default:` is a decision about the members not listed; a switch without one must list them all.
  '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
}

export default defineConfig(
  { ignores: ['**/dist/**', '**/node_modules/**'] },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  {
    // Each package's sources with the package's own tsconfig.
    files: ['packages/*/src/**/*.{ts,tsx}'],
    plugins: { '@typescript-eslint': tseslint.plugin },
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules,
  },
  {
    // The tests are typed by one program, tsconfig.test.json (their folders have no tsconfig of their own).
    files: ['packages/*/test/**/*.{ts,tsx}', 'test/**/*.ts'],
    plugins: { '@typescript-eslint': tseslint.plugin },
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { project: ['./tsconfig.test.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules,
  },
)
