// The breaking-change gate of openapi.yaml, for API designers: compares the working tree's
// openapi.yaml with the spec of the last release (the newest git tag v*, else the previous
// commit) using Optic, which classifies each change, and the rules of spec-rules.mjs, which catch
// what Optic does not see (limits, response headers, media types, security, webhooks). A breaking
// change fails unless info.version's major number was raised. `npm run spec:diff` runs it; CI runs
// it after the lint. Run from the repository to check (its working directory); plain Node, no
// dependencies but Optic and yaml.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { breakingChanges, describeChanges } from './spec-rules.mjs';

const optic = path.resolve(import.meta.dirname, '..', 'node_modules', '.bin', 'optic');
const SPEC = 'openapi.yaml';

function git(...args) {
  const run = spawnSync('git', args, { encoding: 'utf8' });
  return run.status === 0 ? run.stdout.trim() : undefined;
}

/** The release to compare with: the newest v* tag before HEAD's changes, else HEAD~1. */
function baseRef() {
  const tag = git('describe', '--tags', '--abbrev=0', '--match', 'v*', 'HEAD');
  if (tag) return { ref: tag, why: `the last release, ${tag}` };
  if (git('rev-parse', '--verify', '--quiet', 'HEAD~1')) return { ref: 'HEAD~1', why: 'the previous commit (no v* tag yet)' };
  return undefined;
}

const majorOf = (text) => Number(/^info:\n(?:[ \t].*\n)*?[ \t]+version:[ \t]*['"]?(\d+)/m.exec(text)?.[1] ?? NaN);

// A shallow clone (CI checkouts often are) holds neither the tags nor the commits before HEAD, so
// the gate would compare with the wrong base or none and pass unseen: it fetches them first.
if (git('rev-parse', '--is-shallow-repository') === 'true') {
  console.log('spec diff: a shallow clone; fetching its history and tags to find the last release');
  const fetched = spawnSync('git', ['fetch', '--quiet', '--unshallow', '--tags'], { stdio: 'inherit' });
  if (fetched.status !== 0) {
    console.error('spec diff: FAILED: a shallow clone whose history could not be fetched, so there is no release to compare with.');
    console.error('Clone with the whole history (git clone without --depth; actions/checkout with fetch-depth: 0).');
    process.exit(1);
  }
}

const base = baseRef();
if (!base) {
  console.log('spec diff: the first commit, and no v* tag: nothing to compare with; passing.');
  process.exit(0);
}
const before = git('show', `${base.ref}:${SPEC}`);
if (before === undefined) {
  console.log(`spec diff: ${base.ref} has no ${SPEC}; passing.`);
  process.exit(0);
}
const after = readFileSync(SPEC, 'utf8');

const scratch = mkdtempSync(path.join(os.tmpdir(), 'spec-diff-'));
let result;
try {
  writeFileSync(path.join(scratch, 'base.yaml'), before);
  console.log(`spec diff: ${SPEC} against ${base.why}`);
  result = spawnSync(optic, ['diff', path.join(scratch, 'base.yaml'), SPEC, '--check'], {
    stdio: 'inherit',
    env: { ...process.env, OPTIC_TELEMETRY_LEVEL: 'off' },
  });
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
if (result.error) throw result.error;
const changes = breakingChanges(parse(before), parse(after));
const found = describeChanges(changes.filter((change) => !change.review));
const toReview = describeChanges(changes.filter((change) => change.review));
if (found.length) {
  console.log(`spec diff: ${found.length} breaking change${found.length > 1 ? 's' : ''} that Optic does not report:`);
  for (const line of found) console.log(`  ${line}`);
}
if (toReview.length) {
  console.log('spec diff: to review by hand (not failed: whether they break a client cannot be told here):');
  for (const line of toReview) console.log(`  ${line}`);
}
// Optic itself lets breaking changes pass under a new major version; the message says which case it is.
const [was, is] = [majorOf(before), majorOf(after)];
if (is > was) {
  console.log(`spec diff: a new major version (${was} -> ${is}): breaking changes are allowed; say what broke in CHANGELOG.md.`);
  process.exit(0);
}
if (result.status === 0 && !found.length) {
  console.log('spec diff: no breaking change.');
  process.exit(0);
}
console.error(`spec diff: FAILED: breaking changes to the contract without a new major version (info.version's major is still ${is}).`);
console.error('Make the change compatible, or raise the major version and say what broke in CHANGELOG.md.');
process.exit(1);
