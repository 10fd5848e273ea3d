// Issue 11's real-time targets, checked against one run's figures, and the report's table rows.

export const REALTIME_TARGETS = {
  rssPerSocketKib: 10,
  heartbeatCoreShare: 0.05,
  p99OneInstanceMs: 20,
  p99TwoInstancesMs: 40,
  stalledP99Drift: 0.1,
  /** Below this, a p99 "moving by 10 %" is scheduling noise: the drift is judged against it. */
  stalledP99FloorMs: 1,
  stalledRssDrift: 0.1,
  caughtUpMs: 10_000,
};

const T = REALTIME_TARGETS;

/** @returns {import('../targets.mjs').Target[]} */
export function evaluateRealtime(results, instances) {
  const targets = [];
  const { idle, latency, stalled, reconnect } = results;
  if (idle) {
    targets.push({
      name: `RSS per idle socket ≤ ${T.rssPerSocketKib} KiB (${idle.sockets} sockets, state included)`,
      measured: `${idle.rss_per_socket_kib} KiB`,
      threshold: `≤ ${T.rssPerSocketKib} KiB`,
      pass: idle.rss_per_socket_kib <= T.rssPerSocketKib,
    });
    targets.push({
      name: `heartbeat and deadline sweeps < ${T.heartbeatCoreShare * 100}% of a core (${idle.sockets} idle sockets)`,
      measured: `${(idle.heartbeat_cpu_core_share * 100).toFixed(2)}% (${idle.idle_cpu_core_share_before} → ${idle.idle_cpu_core_share_with_sockets} of a core)`,
      threshold: `< ${T.heartbeatCoreShare * 100}%`,
      pass: idle.heartbeat_cpu_core_share < T.heartbeatCoreShare,
    });
  }
  const limit = instances === 2 ? T.p99TwoInstancesMs : T.p99OneInstanceMs;
  if (latency) {
    const l = latency.latency.from_201;
    targets.push({
      name: `p99 from the 201 to the peer's socket ≤ ${limit} ms (${latency.members} members, ${latency.sends_per_second} sends/s, ${instances} instance${instances === 2 ? 's through Redis' : ''})`,
      measured: `${l.p99_ms} ms (p50 ${l.p50_ms}, max ${l.max_ms}; ${latency.latency.undelivered} undelivered)`,
      threshold: `≤ ${limit} ms`,
      pass: l.p99_ms <= limit && latency.latency.undelivered === 0,
    });
  }
  if (latency && stalled) {
    const before = latency.latency.from_201.p99_ms;
    const after = stalled.latency.from_201.p99_ms;
    const allowed = Math.max(before * T.stalledP99Drift, T.stalledP99FloorMs);
    const e2e = (run) => run.latency.from_send.p99_ms;
    targets.push({
      name: `with 1 client in ${Math.round(latency.members / stalled.stalled_clients)} not reading, the others' p99 moves < ${T.stalledP99Drift * 100}% (or < ${T.stalledP99FloorMs} ms)`,
      measured: `${before} → ${after} ms (from the POST: ${e2e(latency)} → ${e2e(stalled)} ms)`,
      threshold: `|Δ| < ${Math.round(allowed * 100) / 100} ms`,
      pass: Math.abs(after - before) < allowed,
    });
    const rss = stalled.service.rss;
    const rssDrift = (rss.end_mib - rss.start_mib) / rss.start_mib;
    targets.push({
      name: `service memory flat while clients stall (RSS end vs start of the window, < ${T.stalledRssDrift * 100}%)`,
      measured: `${rss.start_mib} → ${rss.end_mib} MiB (max ${rss.max_mib})`,
      threshold: `< ${T.stalledRssDrift * 100}%`,
      pass: rssDrift < T.stalledRssDrift,
    });
  }
  if (reconnect) {
    const r = reconnect.reconnect;
    const c = reconnect.delivery_check;
    targets.push({
      name: `${reconnect.sockets} sockets dropped at once: reconnected, re-authenticated and caught up ≤ ${T.caughtUpMs / 1000} s`,
      measured: `${r.all_caught_up_ms} ms (last ready at ${r.ready_ms} ms)`,
      threshold: `≤ ${T.caughtUpMs} ms`,
      pass: r.all_caught_up_ms <= T.caughtUpMs,
    });
    targets.push({
      name: 'every message delivered to every client, none twice after de-duplication by version',
      measured: `${c.messages_expected} expected, ${c.missing} missing, ${c.unexpected} unexpected, ${c.double_applied} twice`,
      threshold: '0 missing, 0 twice',
      pass: c.missing === 0 && c.unexpected === 0 && c.double_applied === 0 && c.fetch_errors === 0,
    });
  }
  return targets;
}

export const REALTIME_COLUMNS = [
  ['scenario', 'Scenario'],
  ['sockets', 'Sockets'],
  ['sends_per_second', 'Sends/s'],
  ['p50_ms', 'p50 ms'],
  ['p99_ms', 'p99 ms'],
  ['max_ms', 'max ms'],
  ['e2e_p99_ms', 'POST→peer p99'],
  ['send_p99_ms', 'POST→201 p99'],
  ['rss', 'Service RSS MiB'],
  ['cpu', 'Service CPU (cores)'],
  ['figure', 'Figure'],
];

/** One row per scenario for the report's table. */
export function realtimeRows({ idle, latency, stalled, reconnect }) {
  const rows = [];
  if (idle) {
    rows.push({
      scenario: 'idle sockets',
      sockets: idle.sockets,
      rss: `${idle.rss_before_mib} → ${idle.rss_after_mib}`,
      cpu: idle.idle_cpu_core_share_with_sockets,
      figure: `${idle.rss_per_socket_kib} KiB/socket; heartbeat ${(idle.heartbeat_cpu_core_share * 100).toFixed(2)}% of a core`,
    });
  }
  const loadRow = (scenario, load, sockets, extra) => ({
    scenario,
    sockets,
    sends_per_second: load.sends_per_second,
    p50_ms: load.latency.from_201.p50_ms,
    p99_ms: load.latency.from_201.p99_ms,
    max_ms: load.latency.from_201.max_ms,
    e2e_p99_ms: load.latency.from_send.p99_ms,
    send_p99_ms: load.latency.send_to_201.p99_ms,
    rss: `${load.service.rss.start_mib} → ${load.service.rss.end_mib}`,
    cpu: load.service.cpu_core_share,
    figure: `in-service delivery p99 ≤ ${load.service.delivery_p99_le_ms} ms; ${load.delivery_check.missing} missing${extra}`,
  });
  if (latency) rows.push(loadRow('members sending', latency, latency.members, ''));
  if (stalled) {
    const closed = stalled.service.sockets_closed.slow_reader ?? 0;
    rows.push(
      loadRow(
        `… with ${stalled.stalled_clients} not reading`,
        stalled,
        latency?.members,
        `; ${closed} closed 4008`,
      ),
    );
  }
  if (reconnect) {
    const r = reconnect.reconnect;
    rows.push({
      scenario: 'all dropped, reconnect',
      sockets: reconnect.sockets,
      sends_per_second: reconnect.rate,
      cpu: reconnect.service.cpu_core_share,
      figure:
        `all ready ${r.ready_ms} ms, all caught up ${r.all_caught_up_ms} ms (half by ` +
        `${r.caught_up?.p50_ms}); ${reconnect.delivery_check.missing} missing, ` +
        `${reconnect.delivery_check.double_applied} twice`,
    });
  }
  return rows;
}
