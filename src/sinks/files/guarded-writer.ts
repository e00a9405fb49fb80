import type { GuardCheck } from '../publish-guard.js';
import type { RunHeld, SinkWriter } from '../sink.js';

/** A writer with a guard: the writer's own methods, `guard` reading its target after prepare, and `heldRun` whether it holds the run id already. */
export function withGuard(writer: SinkWriter, guard: GuardCheck, heldRun: () => Promise<RunHeld>): SinkWriter {
  return {
    get target() {
      return writer.target;
    },
    writeRows: (rows) => writer.writeRows(rows),
    prepare: () => writer.prepare(),
    publish: () => writer.publish(),
    abort: () => writer.abort(),
    ...(writer.leftBehind ? { leftBehind: () => writer.leftBehind!() } : {}),
    guard,
    heldRun,
  };
}
