/**
 * CPU seconds of the processes a benchmark leans on, read from Linux's /proc: this process,
 * the broker listening on a TCP port (the beam.smp serving 5672, not another broker a test
 * started beside it), and every postgres process (that one includes other clients' work:
 * the server is shared). Empty figures where /proc cannot be read.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** utime + stime of `pid` in seconds (USER_HZ 100), or 0 once it is gone. */
function cpuOf(pid: string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

function commOf(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

const pids = () => readdirSync('/proc').filter((p) => /^\d+$/.test(p));

/** The pid of the process listening on TCP `port` (127.0.0.1 or any address), if found. */
export function listenerPid(port: number): string | undefined {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is f[1] (ADDR:PORT), st is f[3] (0A = LISTEN), inode is f[9].
      if (f.length > 9 && f[1].endsWith(`:${hex}`) && f[3] === '0A') inodes.add(f[9]);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const pid of pids()) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m && inodes.has(m[1])) return pid;
      } catch {}
    }
  }
  return undefined;
}

/** CPU seconds so far: this process, `broker` (a pid), all postgres processes. */
export function cpuNow(broker: string | undefined): {
  self: number;
  broker: number;
  postgres: number;
} {
  const self = process.cpuUsage();
  let postgres = 0;
  for (const pid of pids()) if (commOf(pid) === 'postgres') postgres += cpuOf(pid);
  return {
    self: (self.user + self.system) / 1e6,
    broker: broker ? cpuOf(broker) : 0,
    postgres,
  };
}

/** CPU seconds so far of each postgres process, by pid (see {@link postgresCpuSince}). */
export function postgresCpuByPid(): Map<string, number> {
  const byPid = new Map<string, number>();
  for (const pid of pids()) if (commOf(pid) === 'postgres') byPid.set(pid, cpuOf(pid));
  return byPid;
}

/**
 * CPU seconds the postgres processes spent since `baseline` ({@link postgresCpuByPid}):
 * each live process's growth, a new one's all. A process that exited in between takes its
 * CPU with it and counts nothing, so the figure can fall short by an idle connection the
 * pool closed, but never goes below zero (a plain difference of totals did, once a
 * backend that had worked before the baseline exited: bench/drain.ts with a long warm-up).
 */
export function postgresCpuSince(baseline: ReadonlyMap<string, number>): number {
  let spent = 0;
  for (const [pid, now] of postgresCpuByPid()) spent += Math.max(0, now - (baseline.get(pid) ?? 0));
  return spent;
}
