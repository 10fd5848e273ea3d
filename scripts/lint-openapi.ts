// `npm run lint:openapi`: writes the OpenAPI document the app serves at /openapi.json (built on a
// throw-away SQLite) to a temporary file and runs `redocly lint --extends recommended` on it, with
// the exceptions (and their reasons) in redocly.yaml. Redocly exits 0 on warnings; here any error
// or warning fails. PUBLIC_URL, when set, gives the document's server as it does in production.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withThrowawayApp } from './throwaway-app.js';

const CONFIG = fileURLToPath(new URL('../redocly.yaml', import.meta.url));
const require = createRequire(import.meta.url);
const cliPackage = require.resolve('@redocly/cli/package.json');
const cli = join(
  dirname(cliPackage),
  (require(cliPackage) as { bin: { redocly: string } }).bin.redocly,
);

function redoclyLint(file: string, format: 'json' | 'stylish') {
  const args = [cli, 'lint', '--extends', 'recommended', '--config', CONFIG, '--format', format];
  const env = { ...process.env, REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
  const stdio = format === 'json' ? 'pipe' : 'inherit';
  return spawnSync(process.execPath, [...args, file], { env, stdio, encoding: 'utf8' });
}

const problems = await withThrowawayApp(
  async (app, dir) => {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(app.swagger(), null, 2));
    const run = redoclyLint(file, 'json');
    if (run.status !== 0 && run.status !== 1) throw new Error(`redocly failed: ${run.stderr}`);
    const { totals } = JSON.parse(run.stdout) as { totals: { errors: number; warnings: number } };
    const count = totals.errors + totals.warnings;
    if (count > 0) redoclyLint(file, 'stylish'); // the readable report
    return count;
  },
  { PUBLIC_URL: process.env.PUBLIC_URL },
);
console.log(
  problems === 0
    ? 'OpenAPI document: no error and no warning (redocly lint --extends recommended)'
    : `OpenAPI document: ${problems} problems (redocly lint --extends recommended)`,
);
process.exitCode = problems === 0 ? 0 : 1;
