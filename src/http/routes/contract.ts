import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import express from 'express';
import { projectRoot } from '../../config/paths.ts';
import { HttpProblem } from '../problem.ts';

// The contract for whoever builds on the service: openapi.yaml as it is, and the Redoc page that
// `npm run build` makes from it (src/http/docs/build.ts). Neither needs an API key: the contract is no secret.

const SPEC = path.join(projectRoot, 'openapi.yaml');
const DOCS = path.join(projectRoot, 'dist', 'docs.html');

type Docs = { html: string; policy: string };

/**
 * The page's own Content Security Policy in place of helmet's, which forbids the inline scripts a
 * one-file Redoc page is made of. Those scripts are allowed by their hashes, taken from the page as
 * built, rather than by 'unsafe-inline': then no script but ours can run, even if some text of the
 * spec ever got past Redoc's escaping into markup. Styles stay 'unsafe-inline', since Redoc writes
 * them as the page renders and a style can run nothing. Pictures and fonts come inline as data:
 * URLs (src/http/docs/build.ts leaves the page nothing remote); nothing else may load.
 */
function policyFor(html: string): string {
  const hashes = [...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)]
    .map((match) => match[1]!)
    .filter(Boolean)
    .map((script) => `'sha256-${createHash('sha256').update(script).digest('base64')}'`);
  return [
    "default-src 'none'",
    `script-src ${hashes.join(' ')}`,
    "style-src 'unsafe-inline'",
    'img-src data:',
    'font-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

let docs: Promise<Docs | undefined> | undefined;

/** Read once: the page changes only with a new build, which comes with a restart. */
function loadDocs(): Promise<Docs | undefined> {
  docs ??= readFile(DOCS, 'utf8').then(
    (html) => ({ html, policy: policyFor(html) }),
    () => undefined,
  );
  return docs;
}

export function contractRoutes(): express.Router {
  const router = express.Router();
  router.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').sendFile(SPEC);
  });
  router.get('/docs', async (_req, res) => {
    const page = await loadDocs();
    if (!page) throw new HttpProblem(404, 'The reference documentation is not built; run npm run build.');
    res.set('Content-Security-Policy', page.policy).type('html').send(page.html);
  });
  return router;
}
