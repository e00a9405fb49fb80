// `npm run demo`: starts the local sandbox of the incident API where config/default.yaml expects
// it, runs every job in jobs/ once through the real CLI code path, and writes CSV under out/.
// `npm run demo -- <command> [options]` runs another command against it instead (backfill, plan).
// The sandbox's clock and data are fixed, so two runs write byte-identical files.
// `SANDBOX_NOW=2026-07-05` (a day, noon UTC, or an ISO instant) moves the sandbox's clock there:
// the days between are the nights an incremental job missed.
import { loadEnvironment } from '../src/config/load-config.js';
import { main } from '../src/cli.js';
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
try {
  const [first, ...rest] = process.argv.slice(2);
  const args = first !== undefined && !first.startsWith('-') ? [first, '--config', configFile, ...rest] : ['run', '--config', configFile, ...process.argv.slice(2)];
  process.exitCode = await main(args, {
    env,
    stdout: process.stdout,
    stderr: process.stderr,
  });
} finally {
  await sandbox.close();
}
