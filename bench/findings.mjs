// What the report says beside its table: notes on the directory, chat and memory scenarios, and
// the directory's and chat's query plans as the database gave them.
import { chatNotes } from './chat.mjs';
import { DIRECTORY_SCENARIOS } from './directory.mjs';

/** @param {{ directory?: any, chat?: any, memory?: any }} results @returns {string[]} */
export function findingNotes({ directory, chat, memory }) {
  const notes = [];
  if (directory) {
    notes.push(
      `Directory: ${directory.profiles} profiles seeded straight into the database by ` +
        `test/influencer/seed.ts and ANALYZEd in ${directory.seed_seconds} s; every request ` +
        'carries a bearer token (is_following and can_message are computed).',
      ...DIRECTORY_SCENARIOS.map((s) => `${s.name}: ${s.note}`),
      `rare substrings: ${directory.rare_texts ?? directory.rare_substrings.length} in turn, none seen twice within the service's memory of texts (e.g. ${directory.rare_substrings.join(', ')})`,
    );
  }
  if (chat) notes.push(...chatNotes(chat));
  if (memory) {
    const phases = Object.entries(memory.peak_by_phase_mib)
      .map(([phase, mib]) => `${phase} ${mib}`)
      .join(', ');
    notes.push(
      `Memory scenario: a service of its own on a fresh database, VmRSS sampled every ` +
        `${memory.sample_interval_ms} ms from its spawn (${memory.samples} samples); largest ` +
        `sample by phase (MiB): ${phases}; VmHWM ${memory.vm_hwm_mib} MiB.`,
      `Memory scenario, the largest sample: ${JSON.stringify(memory.at_largest_sample)}`,
      `Memory scenario, inside the service at its largest RSS (sampled every 100 ms there): ` +
        JSON.stringify(memory.at_peak_inside),
    );
    if (memory.heap_snapshot_after_load) {
      notes.push(
        'Memory scenario, heap snapshot after the load (live objects only; self sizes, MiB): ' +
          JSON.stringify(memory.heap_snapshot_after_load),
      );
    }
  }
  return notes;
}

/** @param {Record<string, string>} plans */
const planText = (plans) =>
  Object.entries(plans)
    .map(([name, plan]) => `${name}:\n\n\`\`\`\n${plan}\n\`\`\``)
    .join('\n\n');

/** @param {{ directory?: any, chat?: any }} results @returns {{ title: string, text: string }[]} */
export function findingSections({ directory, chat }) {
  const sections = [];
  if (directory) sections.push({ title: 'Directory query plans', text: planText(directory.plans) });
  if (chat) sections.push({ title: 'Chat query plans', text: planText(chat.plans) });
  return sections;
}
