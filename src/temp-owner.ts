import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * Who wrote a temp file: enough to tell later, from another process, whether that writer can
 * still be alive. Carried in the temp file's name, so a sweep needs no lock file or registry.
 */
export interface TempOwner {
  host: string;
  /** First 8 hex digits of the kernel's boot id: after a reboot every old process is gone. */
  boot: string;
  /**
   * The pid namespace's inode (Linux): a pid means something only inside its namespace. Two
   * containers with the same host name (a fixed `--hostname`, `hostNetwork` pods) sharing a
   * volume have the same host and boot but separate pids; another namespace's owner is unknown.
   */
  pidns: string;
  pid: number;
  /** The process's start time in clock ticks since boot (Linux), so a reused pid is told apart. */
  start: string;
}

// Temp files untouched this long, written on another host (another pod of a CronJob sharing a
// volume) or by a version without owner tags, count as abandoned. A live run touches its CSV temp
// file with every page and holds it only through the publish after the last one; no run stays
// silent for a day.
export const FOREIGN_TEMP_MAX_AGE_MS = 24 * 60 * 60 * 1000;

const SAFE = /[^A-Za-z0-9.-]/g;

function readProcStartTicks(pid: number | 'self'): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 2 (comm) is in parentheses and may hold spaces; fields after it are space-separated,
    // starttime is field 22, i.e. the 20th after the closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19];
  } catch {
    return undefined;
  }
}

function readPidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? 'nons';
  } catch {
    return 'nons';
  }
}

function readBootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').replace(/-/g, '').slice(0, 8);
  } catch {
    return 'noboot';
  }
}

let self: TempOwner | undefined;

/** This process as a temp-file owner; the same value for the whole life of the process. */
export function currentOwner(): TempOwner {
  self ??= {
    host: hostname().replace(SAFE, '-').slice(0, 63) || 'host',
    boot: readBootId(),
    pidns: readPidNamespace(),
    pid: process.pid,
    // Off Linux there is no start time to read; the pid alone then decides (a reused pid keeps a
    // leftover, which is the safe mistake).
    start: readProcStartTicks('self') ?? 'nostart',
  };
  return self;
}

/** `host+boot+pidns+pid+start`: the part of a temp file's name that names its owner. */
export function formatOwnerTag(owner: TempOwner = currentOwner()): string {
  return `${owner.host}+${owner.boot}+${owner.pidns}+${owner.pid}+${owner.start}`;
}

/** An owner tag inside a larger file-name pattern (one capture group: the whole tag). */
export const OWNER_TAG_PATTERN = '([A-Za-z0-9.-]+\\+[A-Za-z0-9]+\\+[A-Za-z0-9]+\\+\\d+\\+[A-Za-z0-9]+)';

const TAG = /^([A-Za-z0-9.-]+)\+([A-Za-z0-9]+)\+([A-Za-z0-9]+)\+(\d+)\+([A-Za-z0-9]+)$/;

export function parseOwnerTag(tag: string): TempOwner | undefined {
  const match = TAG.exec(tag);
  if (!match) return undefined;
  return { host: match[1]!, boot: match[2]!, pidns: match[3]!, pid: Number(match[4]), start: match[5]! };
}

export type OwnerState = 'self' | 'alive' | 'gone' | 'unknown';

/**
 * Whether the process that owns a temp file is provably gone. `unknown` (another host) is not
 * gone: only age may then decide (FOREIGN_TEMP_MAX_AGE_MS).
 */
export function ownerState(owner: TempOwner): OwnerState {
  const me = currentOwner();
  if (owner.host !== me.host) return 'unknown';
  if (owner.boot !== me.boot) return 'gone';
  if (owner.pidns !== me.pidns) return 'unknown';
  if (owner.pid === me.pid) return owner.start === me.start ? 'self' : 'gone';
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: the pid exists but belongs to another user; alive as far as we can tell.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
  }
  const start = readProcStartTicks(owner.pid);
  if (start !== undefined && owner.start !== 'nostart' && start !== owner.start) return 'gone';
  return 'alive';
}
