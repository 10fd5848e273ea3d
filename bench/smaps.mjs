// Where a process's resident set lies, from outside (/proc/<pid>/smaps): file-backed pages by file
// (the node binary, native addons, shared libraries, the database's files) and anonymous memory by
// kind of mapping. V8's heap and malloc both take anonymous memory, so the split between them comes
// from inside the process (bench/loop-monitor.cjs); this side says what the kernel holds.
import { readFileSync, readdirSync, realpathSync } from 'node:fs';
import { MIB, round } from './memory.mjs';

const NODE_BINARY = realpathSync(process.execPath);
const PAGE = 4096;
const V8_PAGE = 256 * 1024;
/** glibc gives each thread arena a heap reserved 64 MiB at a time (HEAP_MAX_SIZE, 64-bit). */
const ARENA_RESERVATION = 64 * MIB;

/**
 * @typedef {object} Mapping
 * @property {number} size  bytes of address space
 * @property {string} path  file, [heap], [stack], or '' for anonymous
 * @property {string} perms
 * @property {number} rss   resident bytes
 * @property {number} start
 */

/** @param {number} pid @returns {Mapping[]} */
export function readSmaps(pid) {
  /** @type {Mapping[]} */
  const mappings = [];
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (header) {
      const start = parseInt(header[1], 16);
      const end = parseInt(header[2], 16);
      mappings.push({ start, size: end - start, perms: header[3], path: header[4], rss: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && mappings.length > 0) mappings[mappings.length - 1].rss = Number(rss[1]) * 1024;
  }
  return mappings;
}

/**
 * Resident MiB by kind. `argon2Bytes` is one hash's working memory: an anonymous mapping of that
 * size (rounded up to malloc's pages) is one hash's buffer, mmap()ed by malloc on its own.
 * @param {number} pid
 * @param {{ argon2Bytes: number, databaseDir?: string }} options
 */
export function residentByKind(pid, { argon2Bytes, databaseDir }) {
  const mappings = readSmaps(pid);
  /** @type {Record<string, number>} */
  const parts = {};
  const add = (kind, bytes) => (parts[kind] = (parts[kind] ?? 0) + bytes);
  let argon2Mappings = 0;
  for (const [index, m] of mappings.entries()) {
    if (m.rss === 0) continue;
    const kind = classify(m, mappings[index - 1], { argon2Bytes, databaseDir });
    if (kind === 'anon: argon2 buffers') argon2Mappings += 1;
    add(kind, m.rss);
  }
  const total = Object.values(parts).reduce((a, b) => a + b, 0);
  const sorted = Object.entries(parts)
    .sort(([, a], [, b]) => b - a)
    .map(([kind, bytes]) => [kind, round(bytes / MIB)]);
  return {
    total_mib: round(total / MIB),
    argon2_buffers_mapped: argon2Mappings,
    threads: threadCount(pid),
    by_kind_mib: Object.fromEntries(sorted),
  };
}

/**
 * @param {Mapping} m
 * @param {Mapping | undefined} before  the mapping just below it, if any
 * @param {{ argon2Bytes: number, databaseDir?: string }} options
 */
function classify(m, before, { argon2Bytes, databaseDir }) {
  if (m.path === NODE_BINARY) return 'file: node binary';
  if (m.path.endsWith('.node')) return 'file: native addons (.node)';
  if (databaseDir && m.path.startsWith(databaseDir)) return 'file: database files';
  if (/\.so(\.|$)/.test(m.path)) return 'file: shared libraries';
  if (m.path === '[heap]') return 'anon: [heap] (malloc main arena)';
  if (m.path === '[stack]') return 'anon: main thread stack';
  if (m.path.startsWith('[')) return `anon: ${m.path}`;
  if (m.path !== '') return 'file: other';
  // @node-rs/argon2 allocates through mimalloc, which maps a block this large on its own.
  if (m.size >= argon2Bytes && m.size <= argon2Bytes + 256 * 1024) return 'anon: argon2 buffers';
  // V8 (without pointer compression) maps its heap in 256 KiB pages, each on its own boundary.
  if (m.size === V8_PAGE && m.start % V8_PAGE === 0) return 'anon: V8 heap pages';
  if (m.perms === 'rwxp') return 'anon: V8 code range';
  // A thread arena's heap starts on a 64 MiB boundary; its tail is reserved (---p), not resident.
  if (m.start % ARENA_RESERVATION === 0 && m.size <= ARENA_RESERVATION && m.perms === 'rw-p')
    return 'anon: malloc thread arenas';
  // glibc puts one guard page right below each thread's stack.
  const guarded =
    before?.perms.startsWith('---') && before.size === PAGE && before.start + PAGE === m.start;
  if (guarded && m.size >= MIB) return 'anon: thread stacks';
  return 'anon: other (large mallocs, V8 large objects and tables)';
}

/** @param {number} pid */
function threadCount(pid) {
  try {
    return readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}
