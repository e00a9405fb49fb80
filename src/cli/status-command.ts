import { selectJobs } from '../config/load-config.js';
import { formatJobMorning } from '../presentation/morning-lines.js';
import { morningOf } from '../workspace/morning-status.js';
import { loadWorkspace } from '../workspace/load-workspace.js';
import { statusOfWorkspace } from '../workspace/status-workspace.js';
import { COMMON_HELP, EXIT, logHelp, parseCommandArgs, type Command } from './command.js';
import { openOutput } from './output.js';
import { workspaceFlags } from './orchestration-flags.js';

export const statusCommand: Command = {
  name: 'status',
  help: `Usage: tilehouse status [--config FILE] [--jobs DIR] [--job NAME]... [--json]

For each job (or each --job), for each sink's target (the one the schedule's latest run wrote;
a dated path names that run's day): the run
that last published it, when that run started, its row count and where that was read (a file's
manifest; a gs:// or s3:// object's metadata, rows counted; a table's run ledger: BigQuery's, or
PostgreSQL's _tilehouse_runs; a table appended or merged into: its rows counted, or BigQuery's
table metadata, beside what that run wrote), and LATE when
the job's schedule fired since and no run started since then wrote it. The run is the one the
run history says published the target last (a manifest, an object's metadata or a ledger row
confirms it): a local file without a manifest is named by the history, its rows counted ("run
unknown" only when the history keeps no run that wrote it, or the file changed since); a day
window's target names its run and window (WINDOW). When the job's definition changed since the
run that wrote a target (its record in the history keeps the definition it ran with), the block
"changed since run RUN (old → new)" says what, once per job: the
query's items or filters, its column overrides, its sinks, its tile id, its source settings (a
target another run wrote, or one whose run the history no longer keeps, gets a line of its own). Above the targets, the job's last run from the run
history (history.location): OK, FAILED CODE, REFUSED (a publish guard), STOPPED, PARTIAL, RUNNING
or KILLED (a run that never reached its end), its run and trace id (and with lineage on, the OpenLineage namespace, job and each try's run
id), rows and where its time went, beside the median of the job's last 7 successful runs before it
("usually:"; FAR OFF when rows are more than 50 % off it, or a time 3 times it or a third of it,
and at least 1 s away); LATE when no run started since the schedule fired. Below them, what
changed since the run that wrote them as old → new values, every failed day window no later run
filled ("hole:", with the backfill that fills it), what a run left behind (after a last run that
did not end well: what it named, and what lies where each sink writes, found by looking), each with
how it goes away, and the commands that run the job again.
Reads the targets, where they are written and the history only: no credentials of the source, no
request to it, writes nothing.

  JOB (tile TILE; schedule CRON ZONE, last due TIME)
    last run: OUTCOME [CODE], run RUN of TIME [(trace ID; lineage NAMESPACE JOB run RUNID)]; N rows, N pages in N s
      [MESSAGE]
      [no trace: it was killed before the collector accepted a span of it]
      [lineage: RUNID closed with FAIL by run RUN2 at TIME]
      time: source N s [(usually N s)], reading N s, prepare KIND N s, publish KIND N s
      usually: N rows in N s (median of N earlier successful runs)[; FAR OFF: N rows, N s, source N s]
    [LATE: no run has started since the schedule fired at TIME]
    KIND TARGET: run RUN [(window DAY..DAY)] of TIME, N rows (where it was read)[; LATE: the run due TIME has not published it | ; NOT PUBLISHED: the run due TIME, run RUN, OUTCOME CODE]
      [the job's query changed since run RUN2: filters on HEADER   (a target another run wrote)]
    changed since run RUN (old → new):
      filters on HEADER: OLD → NEW
    hole: DAY..DAY, failed in [backfill ]run RUN of TIME (CODE); no run since filled it
      re-run: tilehouse backfill --job JOB --from DAY --to DAY --step STEP ...
    left behind:
      WHAT   (what the run named at its end; a killed run's record and open lineage run; what looking found)
        goes: HOW IT GOES AWAY
      not checked: KIND PLACE: WHY
    repair: tilehouse run ... --job JOB   (an incremental job's failed days: tilehouse backfill ... --job JOB --from DAY --to DAY --resume)
            kubectl create job -n tilehouse --from=cronjob/CRONJOB CRONJOB-$(date +%s)
    repair: undo the edit since run RUN, then run the job again:   (a refusal after an edit; fix the job's tile id: one the source refuses)
              FILE:LINE: PART is NEW; set it back to OLD
            tilehouse run ... --job JOB
            kubectl create job -n tilehouse --from=cronjob/CRONJOB CRONJOB-$(date +%s)
            if the change is meant: tilehouse run ... --job JOB --allow-shrink

Options:
${COMMON_HELP}
  -t, --job NAME       only this job; repeatable
      --tile NAME      the same as --job (its older name)
      --json           print the statuses as one JSON array
${logHelp('warn')}
  -h, --help           show this help

Example:
  tilehouse status --config config/production.example.yaml

Exit codes: 0 every target read and none late, 1 a target is late, has nothing yet (with a
schedule) or could not be read, a job's last run did not publish, a failed window is a hole, or
the history could not be read, 2 bad config or usage.
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('status', args, { job: { type: 'string', short: 't', multiple: true }, json: { type: 'boolean' } });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const { logger } = openOutput('status', values, io, 'warn');
    const workspace = await loadWorkspace(values, io.env);
    const jobs = selectJobs(workspace.jobs, values.job ?? [], workspace.jobsDirectory);
    const statuses = await statusOfWorkspace(workspace, jobs, { logger, signal: io.signal, seams });
    const mornings = await morningOf(workspace, jobs, statuses, { seams, fixFlags: workspaceFlags(values), logger });
    io.stdout.write(values.json ? `${JSON.stringify(mornings, null, 2)}\n` : mornings.map(formatJobMorning).join(''));
    const behind = mornings.some(
      (morning) =>
        morning.repair !== undefined ||
        morning.historyUnreadable !== undefined ||
        morning.holes !== undefined ||
        morning.targets.some((target) => target.late !== undefined || target.state === 'unreadable'),
    );
    return behind ? EXIT.tileFailed : EXIT.ok;
  },
};
