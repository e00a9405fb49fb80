import type { ErrorCode } from '../error-codes.js';
import { messageOf } from '../errors.js';
import { EXIT, type CliIo } from './command.js';
import { writeSummary, type SummaryTarget } from './output.js';

/**
 * Writes the machine-readable summary and returns the command's exit code. A summary that cannot
 * be written (disk full, directory removed mid-run) is reported as `summary_write_failed`; a run
 * that otherwise succeeded then exits 1, since whatever reads the file would miss it.
 */
export async function reportSummary(target: SummaryTarget, summary: object, code: number, io: CliIo): Promise<number> {
  try {
    await writeSummary(target, summary, io);
    return code;
  } catch (error) {
    const file = typeof target === 'object' ? target.file : 'stdout';
    const failure: ErrorCode = 'summary_write_failed';
    io.stderr.write(
      `tilehouse: ${failure}: cannot write the run summary to ${file} (${(error as NodeJS.ErrnoException).code ?? messageOf(error)}); the run itself ended with exit ${code}\n`,
    );
    return code === EXIT.ok ? EXIT.tileFailed : code;
  }
}
