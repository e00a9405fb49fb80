// `npm run demo`: starts the local sandbox of the incident API where config/default.yaml expects
// it, runs every job in jobs/ once through the real CLI code path, and writes CSV under out/.
// `npm run demo -- <command> [options]` runs another command against it instead (backfill, plan,
// schedule: the worker runs the jobs on their crons until Ctrl-C / SIGTERM, exit 130 / 143).
// The sandbox's clock and data are fixed, so two runs write byte-identical files.
// `SANDBOX_NOW=2026-07-05` (a day, noon UTC, or an ISO instant) moves the sandbox's clock there:
// the days between are the nights an incremental job missed.
import { loadEnvironment } from '../src/config/load-config.js';
import { EXIT, main } from '../src/cli.js';
import { startSandbox } from '../sandbox/index.js';

/** SANDBOX_NOW as the sandbox's "now"; undefined keeps its fixed default (2026-07-01). */
function sandboxNow(value: string | undefined): Date | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const now = new Date(/^\d{4}-\d{2}-\d{2}$/.test(value.trim()) ? `${value.trim()}T12:00:00Z` : value.trim());
  if (Number.isNaN(now.getTime())) {
    process.stderr.write(`demo: SANDBOX_NOW=${JSON.stringify(value)} is not a day YYYY-MM-DD or an ISO 8601 instant\n`);
    process.exit(2);
  }
  return now;
}

const configFile = process.env.TILEHOUSE_CONFIG ?? 'config/default.yaml';
const environment = await loadEnvironment(configFile);
const address = new URL(environment.source.baseUrl);
const now = sandboxNow(process.env.SANDBOX_NOW);
const sandbox = await startSandbox({ host: address.hostname, port: Number(address.port), incidents: 2000, ...(now === undefined ? {} : { now }) });
process.stderr.write(`sandbox listening on ${sandbox.url}${now === undefined ? '' : `, its clock at ${now.toISOString()}`}\n`);

const env = {
  ...process.env,
  TILEHOUSE_CLIENT_ID: process.env.TILEHOUSE_CLIENT_ID ?? sandbox.clientId,
  TILEHOUSE_CLIENT_SECRET: process.env.TILEHOUSE_CLIENT_SECRET ?? sandbox.clientSecret,
};
// As the `tilehouse` process does (src/cli.ts runAsProcess): SIGTERM / SIGINT abort the command
// cleanly, a second one exits at once. `schedule` waits for this signal; without one it refuses.
const controller = new AbortController();
let received: NodeJS.Signals | undefined;
const onSignal = (signal: NodeJS.Signals) => {
  if (received !== undefined) process.exit(signal === 'SIGINT' ? EXIT.sigint : EXIT.sigterm);
  received = signal;
  process.stderr.write(`demo: ${signal} received; stopping cleanly (send again to exit at once)\n`);
  controller.abort(new Error(`stopped by ${signal}`));
};
process.on('SIGTERM', onSignal);
process.on('SIGINT', onSignal);

try {
  const [first, ...rest] = process.argv.slice(2);
  const args =
    first !== undefined && !first.startsWith('-') ? [first, '--config', configFile, ...rest] : ['run', '--config', configFile, ...process.argv.slice(2)];
  const code = await main(args, {
    env,
    stdout: process.stdout,
    stderr: process.stderr,
    signal: controller.signal,
  });
  process.exitCode = received === 'SIGTERM' ? EXIT.sigterm : received === 'SIGINT' ? EXIT.sigint : code;
} finally {
  await sandbox.close();
}
