import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { currentOwner, formatOwnerTag, type TempOwner } from '../../src/temp-owner.js';
import { stopProcess } from './child-process.js';

/** A process's start time in clock ticks since boot, read independently of src/ (field 22 of /proc/<pid>/stat). */
export async function procStartTicks(pid: number): Promise<string> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

/** An owner tag on this host and boot, for another process. */
export function tagOf(overrides: Partial<TempOwner>): string {
  return formatOwnerTag({ ...currentOwner(), ...overrides });
}

/** A pid no process can have (pid_max is at most 2^22): provably gone on this host and boot. */
export const DEAD_PID = 99_999_999;

export interface LiveProcess {
  child: ChildProcess;
  pid: number;
  start: string;
  /** Its owner tag, as its own run would have written it. */
  tag: string;
  stop: () => Promise<void>;
}

/** A real other process (`sleep 30`) that stays alive until `stop`. */
export async function startLiveProcess(): Promise<LiveProcess> {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  await once(child, 'spawn');
  const pid = child.pid!;
  const start = await procStartTicks(pid);
  return { child, pid, start, tag: tagOf({ pid, start }), stop: () => stopProcess(child) };
}
