// What a V8 heap snapshot (v8.writeHeapSnapshot) holds, summed by kind: the snapshot lists every
// live object with its own ("self") size; this adds them up by node type (code, strings, arrays,
// closures…) and, for objects, by constructor, so the report says what the live heap is made of;
// and the source text V8 keeps of every loaded module, by where the module comes from.
import { readFileSync } from 'node:fs';
import { MIB, round } from './memory.mjs';

const TOP = 15;

/**
 * @param {string} file  a .heapsnapshot
 * @returns {{ total_mib: number, nodes: number, by_type_mib: Record<string, number>,
 *   largest_kinds_mib: Record<string, number>, module_sources_mib: Record<string, number> }}
 */
export function summarizeHeapSnapshot(file) {
  const snapshot = JSON.parse(readFileSync(file, 'utf8'));
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const stride = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const { nodes, strings, edges } = snapshot;
  const edgeStride = snapshot.snapshot.meta.edge_fields.length;
  const edgeTypes = snapshot.snapshot.meta.edge_types[0];
  const edgeCountAt = fields.indexOf('edge_count');
  /** @type {Map<string, number>} */
  const byType = new Map();
  /** @type {Map<string, number>} */
  const byKind = new Map();
  /** @type {Map<string, number>} */
  const sources = new Map();
  const counted = new Set();
  let total = 0;
  let edge = 0;
  for (let i = 0; i < nodes.length; i += stride) {
    const edgeCount = nodes[i + edgeCountAt];
    const firstEdge = edge;
    edge += edgeCount * edgeStride;
    const type = types[nodes[i + typeAt]];
    const size = nodes[i + sizeAt];
    total += size;
    byType.set(type, (byType.get(type) ?? 0) + size);
    const name = strings[nodes[i + nameAt]];
    const kind = kindOf(type, name);
    byKind.set(kind, (byKind.get(kind) ?? 0) + size);
    // A script is a `code` node named by its URL or path, with an internal edge to its source string.
    if (type !== 'code' || !/^(node:|file:|\/)/.test(name)) continue;
    for (let e = firstEdge; e < edge; e += edgeStride) {
      if (edgeTypes[edges[e]] !== 'internal' || strings[edges[e + 1]] !== 'source') continue;
      const source = edges[e + 2];
      if (counted.has(source)) continue;
      counted.add(source);
      const origin = originOf(name);
      sources.set(origin, (sources.get(origin) ?? 0) + nodes[source + sizeAt]);
    }
  }
  return {
    total_mib: round(total / MIB),
    nodes: nodes.length / stride,
    by_type_mib: inMib(byType, Infinity),
    largest_kinds_mib: inMib(byKind, TOP),
    module_sources_mib: inMib(sources, Infinity),
  };
}

/** @param {string} url a script's URL */
function originOf(url) {
  if (url.startsWith('node:')) return "Node's own modules";
  if (url.includes('/node_modules/')) return 'node_modules';
  return 'the service (dist/)';
}

/**
 * Objects by constructor, the rest by type: V8's internal names ("system / Map",
 * "(compiled code)") are already kinds; each string's or closure's name is not.
 * @param {string} type @param {string} name
 */
function kindOf(type, name) {
  if (type === 'object' || type === 'native' || type === 'hidden') return `${type}: ${name}`;
  if (type === 'code' || type === 'array') return `${type}: ${name.split(' / ')[0]}`;
  return type;
}

/** @param {Map<string, number>} sizes @param {number} top */
function inMib(sizes, top) {
  return Object.fromEntries(
    [...sizes]
      .sort(([, a], [, b]) => b - a)
      .slice(0, top)
      .map(([kind, bytes]) => [kind, round(bytes / MIB)]),
  );
}
