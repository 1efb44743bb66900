import { readFile } from 'node:fs/promises';
import path from 'node:path';
import express from 'express';
import { projectRoot } from '../../config/paths.ts';
import { HttpProblem } from '../problem.ts';

// The web page at BASE_PATH/: dist/web.html, which names its script and style by content hash, so
// they can be cached for good while the page itself is asked for again each time.

const WEB = path.join(projectRoot, 'dist', 'web');
const YEAR_MS = 365 * 24 * 3600 * 1000;

export function webUiRoutes(basePath: string): express.Router {
  const router = express.Router();
  // The <base> element makes the page's links and its API calls relative to BASE_PATH.
  const page = readFile(`${WEB}.html`, 'utf8').then(
    (html) => html.replace('%BASE%', basePath),
    () => undefined,
  );
  router.get('/', async (_req, res) => {
    const html = await page;
    if (!html) throw new HttpProblem(404, 'The web page is not built; run npm run build.');
    res.set('Cache-Control', 'no-cache').type('html').send(html);
  });
  router.use('/web', express.static(WEB, { index: false, immutable: true, maxAge: YEAR_MS, fallthrough: true }));
  return router;
}
