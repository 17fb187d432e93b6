import { defineConfig } from 'vite'

// The service serves this build at / (DASHBOARD_DIR), so asset paths are absolute: a reload of
// /projects/… must still find /assets/…. The flagsync packages are bundled from their compiled dist/
// (`npm run build` at the root runs tsc -b first). sw.js (public/) gets the build's asset list, see the plugin.
export default defineConfig({
  base: '/',
  // The persister packages pin their own query-core: one copy in the bundle, the one react-query uses.
  resolve: { dedupe: ['@tanstack/query-core', '@tanstack/query-persist-client-core'] },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, target: 'es2022' },
  plugins: [
    {
      name: 'flagsync-shell-manifest',
      apply: 'build',
      generateBundle(_options, bundle) {
        const files = Object.keys(bundle).filter((name) => !name.endsWith('.map'))
        // The shell the service worker caches: every emitted file, so the page opens without a network.
        this.emitFile({
          type: 'asset',
          fileName: 'shell.json',
          source: JSON.stringify(['/', ...files.map((f) => `/${f}`)]),
        })
      },
    },
  ],
})
