import { defineConfig } from 'vite'

// The flagsync packages are bundled from their compiled dist/ (`npm run build` at the root runs tsc -b first).
// Relative asset paths, so the server can serve the app from any directory (CONSOLE_DIR).
export default defineConfig({
  base: './',
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, target: 'es2022' },
})
