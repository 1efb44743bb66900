import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

// Builds dist/docs.html, the reference page GET /docs serves: Redoc's one-file page of openapi.yaml,
// made here so that the running service needs no @redocly/cli. The page must load nothing from
// elsewhere: the bundle goes inside it (--inlineBundle), our template gives it no favicon to ask
// for, and the one remote thing left in Redoc's bundle, its logo on its CDN, becomes an inline
// picture that still says whose the page is.

const root = path.resolve(import.meta.dirname, '../../..');
const out = path.join(root, 'dist', 'docs.html');
const REMOTE_LOGO = /https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(?:-full)?\.svg/g;
const LOGO = `data:image/svg+xml,${encodeURIComponent(
  "<svg xmlns='http://www.w3.org/2000/svg' width='56' height='16'><text x='0' y='12' font-family='sans-serif' font-size='12' fill='#6b7280'>Redocly</text></svg>",
)}`;

// Redoc's page goes to a scratch folder first, so that dist/ never holds one that loads its logo.
const scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-docs-'));
try {
  const built = path.join(scratch, 'docs.html');
  const redocly = path.join(root, 'node_modules', '.bin', 'redocly');
  const template = path.join(import.meta.dirname, 'template.hbs');
  // --openapi.disableTelemetry: else the page reports every visit to Redocly.
  execFileSync(redocly, ['build-docs', 'openapi.yaml', '--inlineBundle', '--template', template, '--openapi.disableTelemetry=true', '--output', built], {
    cwd: root,
    stdio: 'inherit',
  });
  const page = await readFile(built, 'utf8');
  if (!page.match(REMOTE_LOGO)) throw new Error('Redoc no longer loads its logo from its CDN: drop that step from src/http/docs/build.ts.');
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, page.replace(REMOTE_LOGO, LOGO));
} finally {
  await rm(scratch, { recursive: true, force: true });
}
