import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

// Bundles the page into dist/web: its script and style under names that carry a hash of their
// contents (so the server can let browsers keep them for good); and dist/web.html, the page that
// points at them, beside that folder rather than in it, since everything in it is served as is.
// The SDK comes along; save()'s node: imports are never called in a browser and stay out.

const here = path.join(import.meta.dirname, 'ui');
const out = path.resolve(import.meta.dirname, '../../dist/web');
const pageOut = `${out}.html`;

await rm(out, { recursive: true, force: true });
const { metafile } = await build({
  entryPoints: [path.join(here, 'main.ts')],
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2022', 'chrome109', 'firefox115', 'safari16'],
  external: ['node:*'],
  minify: true,
  sourcemap: true,
  outdir: out,
  entryNames: '[name]-[hash]',
  metafile: true,
  logLevel: 'warning',
});
const outputs = Object.keys(metafile.outputs).map((file) => path.basename(file));
const named = (extension: string) => `web/${outputs.find((file) => file.endsWith(extension))!}`;
const page = (await readFile(path.join(here, 'index.html'), 'utf8')).replace('%JS%', named('.js')).replace('%CSS%', named('.css'));
await writeFile(pageOut, page);
