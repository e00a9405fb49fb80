// `npm run demo`: starts the local sandbox of the incident API where config/default.yaml expects
// it, runs every job in jobs/ once through the real CLI code path, and writes CSV under out/.
// `npm run demo -- <command> [options]` runs another command against it instead (backfill, plan).
// The sandbox's clock and data are fixed, so two runs write byte-identical files.
import { loadEnvironment } from '../src/config/load-config.js';
import { main } from '../src/cli.js';
import { startSandbox } from '../sandbox/index.js';

const configFile = process.env.TILEHOUSE_CONFIG ?? 'config/default.yaml';
const environment = await loadEnvironment(configFile);
const address = new URL(environment.source.baseUrl);
const sandbox = await startSandbox({ host: address.hostname, port: Number(address.port), incidents: 2000 });
process.stderr.write(`sandbox listening on ${sandbox.url}\n`);

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
