// Bundles the extension into dist/extension.js with esbuild (vscode stays external).
// --tests also builds the pure modules the fast tests load directly (out/).
// usage: node scripts/build.mjs [--production] [--watch] [--tests]
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const options = {
  entryPoints: ['src/extension.ts'],
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node18',
  outfile: 'dist/extension.js',
  external: ['vscode'],
  minify: production,
  sourcemap: !production,
  sourcesContent: false,
  logLevel: 'warning',
};

if (process.argv.includes('--tests')) {
  for (const name of ['diffs', 'review/hunks', 'review/words']) {
    const outfile = `out/${name.split('/').at(-1)}.js`;
    await esbuild.build({ ...options, entryPoints: [`src/${name}.ts`], outfile, external: [] });
  }
}

if (watch) {
  const context = await esbuild.context(options);
  await context.watch();
} else {
  await esbuild.build(options);
}
