import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/** Stops a helper process (emulator, sandbox): SIGTERM, then SIGKILL if it lingers 5 s. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
