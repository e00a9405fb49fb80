import type { GuardCheck } from '../publish-guard.js';
import type { SinkWriter } from '../sink.js';

/** A writer with a guard: the writer's own methods, and `guard` reading its target after prepare. */
export function withGuard(writer: SinkWriter, guard: GuardCheck): SinkWriter {
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
  };
}
