// Prints the results as a table and writes them as JSON and Markdown under bench/results/.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, platform, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MIB, round } from './memory.mjs';
import { verdict } from './targets.mjs';

export const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

export function machineInfo() {
  const list = cpus();
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    // not a git checkout
  }
  return {
    date: new Date().toISOString(),
    cpus: list.length,
    cpu_model: list[0]?.model ?? 'unknown',
    memory_mib: round(totalmem() / MIB, 0),
    platform: `${platform()} ${release()}`,
    node: process.version,
    commit,
  };
}

const COLUMNS = [
  ['scenario', 'Scenario'],
  ['connections', 'Conns'],
  ['requests_per_second', 'Req/s'],
  ['p50_ms', 'p50 ms'],
  ['p99_ms', 'p99 ms'],
  ['expected_answer', 'Expected'],
  ['unexpected', 'Unexpected'],
  ['peak_rss_mib', 'Peak RSS MiB'],
  ['cpu_ms_per_request', 'CPU ms/req'],
  ['loop_delay_p99_ms', 'Loop p99 ms'],
];

/** The soak's loads run side by side: memory and CPU are reported for the whole, not per load. */
export const SOAK_COLUMNS = COLUMNS.filter(
  ([key]) => !['peak_rss_mib', 'cpu_ms_per_request', 'loop_delay_p99_ms'].includes(key),
);

/** One table row per measured load, the storm's two loads and the raw argon2id figure included. */
export function tableRows(results) {
  const rows = results.scenarios.map((s) => ({ ...s, scenario: s.name }));
  if (results.rawVerify) {
    const r = results.rawVerify;
    rows.push({
      scenario: 'raw argon2id verify (bench process)',
      connections: r.concurrency,
      requests_per_second: r.verifies_per_second,
      cpu_ms_per_request: r.cpu_ms_per_verify,
    });
  }
  if (results.storm) {
    const { storm } = results;
    const shared = { peak_rss_mib: storm.peak_rss_mib, loop_delay_p99_ms: storm.loop_delay.p99_ms };
    rows.push({
      ...storm.login,
      ...shared,
      scenario: 'storm: POST /api/login',
      expected_answer: '200',
    });
    rows.push({
      ...storm.profile,
      ...shared,
      scenario: `storm: GET /api/profile at ${storm.profile.rate} req/s`,
      expected_answer: '200',
    });
  }
  if (results.memory) {
    const { memory } = results;
    const shared = {
      peak_rss_mib: memory.peak_rss_mib,
      loop_delay_p99_ms: memory.loop_delay.p99_ms,
    };
    rows.push({
      ...memory.login,
      ...shared,
      scenario: 'memory: POST /api/login',
      expected_answer: '200',
    });
    rows.push({
      ...memory.profile,
      ...shared,
      scenario: 'memory: GET /api/profile',
      expected_answer: '200',
    });
  }
  return rows;
}

const cell = (value) => (value === undefined || value === null ? '' : String(value));

/** @param {Record<string, unknown>[]} rows */
export function textTable(rows, columns = COLUMNS) {
  const widths = columns.map(([key, title]) =>
    Math.max(title.length, ...rows.map((row) => cell(row[key]).length)),
  );
  const line = (values) =>
    values.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ');
  return [
    line(columns.map(([, title]) => title)),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((row) => line(columns.map(([key]) => cell(row[key])))),
  ].join('\n');
}

/** @param {Record<string, unknown>[]} rows */
export function markdownTable(rows, columns = COLUMNS) {
  const line = (values) => `| ${values.join(' | ')} |`;
  return [
    line(columns.map(([, title]) => title)),
    line(columns.map((_, i) => (i === 0 ? '---' : '---:'))),
    ...rows.map((row) => line(columns.map(([key]) => cell(row[key])))),
  ].join('\n');
}

/** @param {import('./targets.mjs').Target[]} targets */
export function targetLines(targets) {
  return targets.map((t) => `${verdict(t)}  ${t.name}: ${t.measured}`);
}

/** Prints and writes `<name>.json` and `<name>.md` under bench/results/. */
export function writeReport(name, title, report, rows, columns = COLUMNS) {
  const notes = report.notes ?? [];
  console.log(`\n${title}\n`);
  console.log(textTable(rows, columns));
  console.log('');
  for (const line of targetLines(report.targets)) console.log(line);
  for (const note of notes) console.log(`note: ${note}`);

  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, `${name}.json`), JSON.stringify(report, null, 2) + '\n');
  const m = report.machine;
  const markdown = [
    `# ${title}`,
    '',
    `${m.date} · ${m.cpus} × ${m.cpu_model} · ${m.memory_mib} MiB · ${m.platform} · Node ${m.node} · commit ${m.commit}`,
    '',
    `Database: ${report.settings.database}. ${report.settings.description}`,
    '',
    markdownTable(rows, columns),
    '',
    '## Targets',
    '',
    ...report.targets.map((t) => `- **${verdict(t)}** ${t.name}: ${t.measured}`),
    '',
    ...(notes.length > 0 ? ['## Notes', '', ...notes.map((n) => `- ${n}`), ''] : []),
    ...(report.sections ?? []).flatMap(({ title, text }) => [`## ${title}`, '', text, '']),
  ].join('\n');
  writeFileSync(join(RESULTS_DIR, `${name}.md`), markdown);
  console.log(`\nwritten: bench/results/${name}.json, bench/results/${name}.md`);
}
