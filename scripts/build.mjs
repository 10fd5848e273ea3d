/* global performance */
// `npm run build` (and `npm start`'s prestart): compiles src/ into dist/ with tsc, unless dist/
// was built from exactly the sources there are now. `npm run build -- --force` always compiles.
//
// "Exactly" is a SHA-256 over the contents of every file under src/, the tsconfig files, this
// script and the TypeScript version, written into dist/ after a build succeeds. Contents rather
// than modification times: a checkout or `git pull` stamps files with the time of the checkout, and
// a deleted source changes no time at all. Hashing src/ (1.2 MB, mostly the password list) takes a
// few milliseconds; `tsc --build`'s own up-to-date check has to load TypeScript first (~0.5 s).
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const FINGERPRINT_FILE = '.build-fingerprint';
const INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs'];
/** Files tsc does not emit that the service reads at run time, beside its modules. */
const ASSETS = ['security/common-passwords.txt'];

function filesUnder(path) {
  const absolute = join(ROOT, path);
  if (!statSync(absolute).isDirectory()) return [path];
  return readdirSync(absolute, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

function sourceFingerprint() {
  const require = createRequire(import.meta.url);
  const hash = createHash('sha256');
  hash.update(`typescript@${require('typescript/package.json').version}\0`);
  for (const file of INPUTS.flatMap(filesUnder).sort()) {
    hash
      .update(`${file}\0`)
      .update(readFileSync(join(ROOT, file)))
      .update('\0');
  }
  return hash.digest('hex');
}

function builtFingerprint() {
  const file = join(DIST, FINGERPRINT_FILE);
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
}

/** Compiles into a folder of its own, then swaps it in, so dist/ is never half built. */
function build(fingerprint) {
  const staging = `${DIST}.build-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const args = [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', staging];
  try {
    execFileSync(process.execPath, args, { stdio: 'inherit' });
    for (const asset of ASSETS) cpSync(join(ROOT, 'src', asset), join(staging, asset));
    writeFileSync(join(staging, FINGERPRINT_FILE), `${fingerprint}\n`);
    rmSync(DIST, { recursive: true, force: true });
    renameSync(staging, DIST);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    // tsc has printed its errors; anything else (a missing asset, say) is worth its message.
    if (error.status === undefined) console.error(error.message);
    console.error('build failed: dist/ left as it was');
    process.exit(1);
  }
}

/**
 * A production install (`npm ci --omit=dev`, NODE_ENV=production) has no TypeScript, and an image
 * may ship dist/ without src/: dist/ as built is what runs, unchecked, rather than no start at all.
 */
function buildTools() {
  try {
    createRequire(import.meta.url).resolve('typescript/package.json');
  } catch {
    return 'TypeScript is not installed (an install without dev dependencies)';
  }
  return existsSync(join(ROOT, 'src')) ? undefined : 'there is no src/';
}

// The service's own check (src/main.cts) would refuse only after the build: say it before.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  console.error(
    `Node ${process.version} is too old: the service runs on Node 22.12+, 24 or 26 (README, Run it).`,
  );
  process.exit(1);
}

const missing = buildTools();
if (missing !== undefined) {
  if (builtFingerprint() === undefined) {
    console.error(`${missing}, and dist/ is not built: run npm install, then npm run build`);
    process.exit(1);
  }
  console.error(`${missing}: running dist/ as built, unchecked against the sources`);
  process.exit(0);
}

const fingerprint = sourceFingerprint();
if (process.argv.includes('--force') || builtFingerprint() !== fingerprint) {
  const started = performance.now();
  build(fingerprint);
  console.log(`built dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
