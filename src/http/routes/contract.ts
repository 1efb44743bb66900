import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import express from 'express';
import { parseDocument, type Node } from 'yaml';
import type { Config } from '../../config/index.ts';
import { projectRoot } from '../../config/paths.ts';
import { HttpProblem } from '../problem.ts';
import { publicBase } from '../public-base.ts';

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

/**
 * openapi.yaml's text before and after its `servers`, read once: each answer puts in between where
 * this service is reached, since the file's own server (127.0.0.1:3000, for `npm start`) is wrong
 * for any other. Spliced into the text rather than written out again, so that the rest stays as the
 * file has it, comments and all, and an answer costs no YAML serialising.
 */
function splitAtServers(text: string): (url: string) => string {
  const servers = parseDocument(text).get('servers', true) as Node | undefined;
  if (!servers?.range) throw new Error('openapi.yaml has no servers');
  const [start, end] = servers.range;
  const kept = start + text.slice(start, end).trimEnd().length;
  // JSON is YAML: a flow sequence in the block sequence's place.
  return (url) => text.slice(0, start) + JSON.stringify([{ url, description: 'This service.' }]) + text.slice(kept);
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

export function contractRoutes(config: Config): express.Router {
  const router = express.Router();
  const specAt = splitAtServers(readFileSync(SPEC, 'utf8'));
  router.get('/openapi.yaml', (req, res) => {
    res.type('application/yaml').send(specAt(publicBase(req, config)));
  });
  router.get('/docs', async (_req, res) => {
    const page = await loadDocs();
    if (!page) throw new HttpProblem(404, 'The reference documentation is not built; run npm run build.');
    res.set('Content-Security-Policy', page.policy).type('html').send(page.html);
  });
  return router;
}
