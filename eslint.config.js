// Lint with type information: the rules that catch what the compiler lets through (a promise
// nobody awaits, a promise where a callback is expected, a switch that forgets a case).
import { readdirSync } from 'node:fs';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

// The layers of src (docs/architecture.md, "Layers"), top to bottom: a room imports only from its
// own folder and from rooms of the layers below its own. Rooms of one layer are apart (each is a
// seam to the others), so that one never reaches sideways into another.
const LAYERS = [
  ['main.ts', 'healthcheck.ts'], // the process: starts the composition root; the image's health check
  ['service.ts'], // the composition root
  ['http', 'worker', 'cli', 'web'], // entry points
  ['client'], // the SDK, for cli and web only (below)
  ['events', 'webhooks'], // what tells callers of the domain's changes
  ['subscriptions'], // sources followed on a schedule, each check a collection
  ['collections'], // the domain's groups of downloads: playlists, feeds, batches
  ['downloads'], // the domain: rules, state, SQL
  ['queue', 'operations'], // what the domain runs on: pg-boss queues; logs, metrics, jobs
  ['sources'], // dispatch, the reader seam, one reader per kind and each kind's engine
  ['media'], // ffmpeg
  ['storage'], // one seam, two stores (local, s3)
  ['net', 'db'], // every outbound request; PostgreSQL
  ['files', 'config'], // file writers, spans, hashes, work folders; the environment's settings
  ['core'], // errors, text rules, small types
];
// A new room is placed in a layer before anything checks it.
const unplaced = readdirSync(new URL('src', import.meta.url)).filter((name) => !LAYERS.flat().includes(name));
if (unplaced.length > 0) throw new Error(`src/${unplaced.join(', src/')}: place it in a layer of eslint.config.js and docs/architecture.md.`);
const room = (name) => `src/${name}`;
const layerZones = LAYERS.flatMap((rooms, level) => {
  const above = LAYERS.slice(0, level).flat();
  return rooms.map((name) => ({
    target: room(name),
    from: [...above, ...rooms.filter((other) => other !== name)].map(room),
    message: `${name} is in layer ${level + 1} of docs/architecture.md ("Layers"): it imports only from layers below it, never from one above or from another room of its own.`,
  }));
}).filter((zone) => zone.from.length > 0);
// cli and web run apart from the server, on the SDK alone (and the generated contract types).
const clientZones = [
  ...['cli', 'web', 'client'].map((name) => ({
    target: room(name),
    from: 'src',
    except: [...new Set(['./client', `./${name}`])],
    message: 'cli, web and client import only the SDK (src/client) and the generated types.',
  })),
  {
    target: LAYERS.flat()
      .filter((name) => !['cli', 'web', 'client'].includes(name))
      .map(room),
    from: room('client'),
    message: 'Only cli and web use the SDK.',
  },
];
// Within sources, readers use the engines, never the other way: an engine knows nothing of dispatch.
const ENGINES = ['direct', 'hls', 'dash', 'segmented', 'html', 'site', 'sandbox', 'ttml'];
const sourceZones = [
  {
    target: ENGINES.map((name) => room(`sources/${name}`)),
    from: ['sources/readers', 'sources/index.ts', 'sources/dispatch.ts', 'sources/reader.ts'].map(room),
    message: 'An engine of sources does not import the readers, the dispatch or the reader seam.',
  },
];

export default tseslint.config(
  { ignores: ['generated/**', 'node_modules/**', 'data/**', 'dist/**'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.js', '.ci/*.mjs', 'src/sources/documents/*.mjs'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
    },
  },
  {
    files: ['src/**/*.ts', 'src/**/*.mjs'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createNodeResolver()], 'import-x/extensions': ['.ts', '.mjs', '.js'] },
    rules: {
      'import-x/no-restricted-paths': ['error', { zones: [...layerZones, ...clientZones, ...sourceZones], basePath: import.meta.dirname }],
      'import-x/no-cycle': 'error',
    },
  },
  // Plain JavaScript has no types to check against.
  { files: ['**/*.js', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
  {
    // supertest types every response body as any; the test client checks each response against
    // openapi.yaml instead (test/support/openapi.ts), which is what these rules would stand in for.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
    },
  },
);
