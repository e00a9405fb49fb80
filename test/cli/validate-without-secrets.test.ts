import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runCli, refusalCode } from '../support/cli-harness.js';
import { execFile } from 'node:child_process';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

/**
 * Issue 25 item 4: `tilehouse validate` runs where the secrets are not (a config repository's CI,
 * a laptop before `tilehouse k8s`). Every check of the files still runs; a secret that cannot be
 * resolved here is a "not checked" line, not an error; `check` and `run` still refuse without it.
 */

const SECRETS = { TEST_CLIENT_ID: 'validate-client', TEST_CLIENT_SECRET: 'validate-secret-2718' };

const temp = tempDirEachTest();
let configFile: string;
let jobsDir: string;

function environmentText(credentials: string[]): string {
  return [
    'source:', // 1
    '  baseUrl: http://127.0.0.1:9', // 2
    '  authUrl: http://127.0.0.1:9', // 3
    ...credentials, // 4, 5
    'sinks:',
    '  csv:',
    `    directory: ${path.join(temp.path, 'out')}`,
    '',
  ].join('\n');
}

const BY_REFERENCE = ['  clientId: ${TEST_CLIENT_ID}', '  clientSecret: ${TEST_CLIENT_SECRET}'];

const JOB = [
  'name: by_type', // 1
  'tile: t-1', // 2
  'query:', // 3
  '  items:', // 4
  '    - header: Type', // 5
  '      formula: "[incident.type]"', // 6
  '      dataType: text', // 7
  '      grouped: true', // 8
  '      order: asc', // 9
  '      filters: []', // 10
  '    - header: Incidents', // 11
  '      formula: "[incident.number]"', // 12
  '      dataType: number', // 13
  '      aggregate: count', // 14
  '      filters: []', // 15
  'sinks:', // 16
  '  - type: csv', // 17
  '',
];

beforeEach(async () => {
  configFile = path.join(temp.path, 'env.yaml');
  jobsDir = path.join(temp.path, 'jobs');
  await mkdir(jobsDir);
  await writeFile(configFile, environmentText(BY_REFERENCE));
  await writeFile(path.join(jobsDir, 'by_type.yaml'), JOB.join('\n'));
});

function validate(env: Record<string, string>, ...extra: string[]) {
  return runCli(['validate', '--config', configFile, '--jobs', jobsDir, ...extra], { env });
}

describe('tilehouse validate without secrets', () => {
  it('passes with no secret in the environment: exit 0, each unresolved secret a "not checked" line with file:line', async () => {
    const result = await validate({});
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(`valid: ${configFile} and 1 job in ${jobsDir}: by_type; 2 secrets not checked\n`);
    expect(result.stderr.split('\n')).toEqual([
      `not checked: ${configFile}:4: source.clientId = "\${TEST_CLIENT_ID}": environment variable TEST_CLIENT_ID is not set here; tilehouse check and run need it`,
      `not checked: ${configFile}:5: source.clientSecret = "\${TEST_CLIENT_SECRET}": environment variable TEST_CLIENT_SECRET is not set here; tilehouse check and run need it`,
      '',
    ]);
  });

  it('is not failed by --strict: a missing secret is not a mistake in the files', async () => {
    const result = await validate({}, '--strict');
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain('not checked:');
  });

  it('says nothing about secrets when they are all there (the legal usual case)', async () => {
    const result = await validate(SECRETS);
    expect(result).toMatchObject({ exitCode: 0, stderr: '', stdout: `valid: ${configFile} and 1 job in ${jobsDir}: by_type\n` });
  });

  it('reports a missing secret file as not checked, with its line, and never reads a present one', async () => {
    const missing = path.join(temp.path, 'secrets', 'client-secret');
    await writeFile(configFile, environmentText(['  clientId: literal-client-id', `  clientSecretFile: ${missing}`]));
    const result = await validate({});
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe(
      `not checked: ${configFile}:5: source.clientSecretFile = ${JSON.stringify(missing)}: the secret file cannot be read here (ENOENT); tilehouse check and run need it\n`,
    );
    expect(result.stdout).toContain('; 1 secret not checked\n');

    // Present and readable: resolvable, so no line; its value appears nowhere in the output.
    await mkdir(path.dirname(missing));
    await writeFile(missing, 'file-secret-value-1618\n');
    const present = await validate({});
    expect(present).toMatchObject({ exitCode: 0, stderr: '' });
    expect(present.stdout).not.toContain('file-secret-value-1618');
  });

  it('still refuses a broken job with file:line (exit 2), listing the unchecked secrets apart', async () => {
    const broken = JOB.map((line, index) => (index === 16 ? '  - type: cvs' : line));
    const file = path.join(jobsDir, 'by_type.yaml');
    await writeFile(file, broken.join('\n'));
    const result = await validate({});
    expect(result.exitCode).toBe(2);
    expect(refusalCode(result)).toBe('config_invalid');
    expect(result.stderr).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:17: sinks\\[0\\]\\.type = "cvs"`));
    // The missing secrets are not among the problems: only notes before them.
    expect(result.stderr).not.toMatch(/config_invalid:[\s\S]*is not set/);
  });

  it('still refuses a literal secret in the YAML, without printing it', async () => {
    await writeFile(configFile, environmentText(['  clientId: literal-client-id', '  clientSecret: hunter2-literal']));
    const result = await validate({});
    expect(result.exitCode).toBe(2);
    expect(refusalCode(result)).toBe('config_invalid');
    expect(result.stderr).toMatch(new RegExp(`${configFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:5: source\\.clientSecret: .*literal secrets are refused`));
    expect(result.stderr + result.stdout).not.toContain('hunter2-literal');
  });
});

describe('the commands that need the secrets', () => {
  it.each([['check'], ['run'], ['plan']])('%s without them exits 2 naming the variable with file:line', async (command) => {
    const result = await runCli([command, '--config', configFile, '--jobs', jobsDir], { env: { TEST_CLIENT_ID: 'id' } });
    expect(result.exitCode).toBe(2);
    expect(refusalCode(result)).toBe('config_invalid');
    expect(result.stderr).toContain(`${configFile}:5: source.clientSecret = "\${TEST_CLIENT_SECRET}": environment variable TEST_CLIENT_SECRET is not set`);
  });

  it('check with a missing secret file exits 2 naming the file with file:line', async () => {
    const missing = path.join(temp.path, 'nope');
    await writeFile(configFile, environmentText(['  clientId: literal-client-id', `  clientSecretFile: ${missing}`]));
    const result = await runCli(['check', '--config', configFile, '--jobs', jobsDir], { env: {} });
    expect(result.exitCode).toBe(2);
    expect(refusalCode(result)).toBe('config_invalid');
    expect(result.stderr).toContain(`${configFile}:5: source.clientSecretFile = ${JSON.stringify(missing)}: cannot read the secret file (ENOENT)`);
  });
});

describe("init's suggested next step", () => {
  it('works as printed in a fresh config repository with no secrets', async () => {
    // A config repository of one's own: config/default.yaml from the example, nothing else.
    const repo = path.join(temp.path, 'repo');
    await mkdir(path.join(repo, 'config'), { recursive: true });
    await writeFile(path.join(repo, 'config', 'default.yaml'), await readFile('config/production.example.yaml', 'utf8'));
    const body = {
      items: [{ header: 'Severity', formula: '[incident.severity_label]', dataType: 'text', grouped: true, order: 'asc', hidden: false, filters: [] }],
      options: { pageNumber: 0, itemsPerPage: 50 },
    };
    await writeFile(
      path.join(repo, 'request.txt'),
      `https://acme.incidents.example.com/api/v1/topics/incident/execute?tileId=65f0a1c2d3e4f5a6b7c8d9aa\n${JSON.stringify(body)}\n`,
    );
    const noSecrets = { TILEHOUSE_CLIENT_ID: '', TILEHOUSE_CLIENT_SECRET: '' };
    // bin/tilehouse.js, as a user's checkout runs it (src/cli.ts through tsx: a cwd outside the
    // checkout cannot resolve tsx by itself).
    const tilehouse = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [path.resolve('bin/tilehouse.js'), ...args],
          { cwd: repo, env: { ...process.env, ...noSecrets }, timeout: 60_000 },
          (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
        );
      });

    const init = await tilehouse(['init', '--from-request', 'request.txt']);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain(': tile 65f0a1c2d3e4f5a6b7c8d9aa, 1 query item (0 hidden)\n'); // not "1 query items"
    const suggested = /^check it with: tilehouse (.*)$/m.exec(init.stdout)?.[1];
    expect(suggested).toBe('validate --jobs jobs');

    const result = await tilehouse(suggested!.split(' '));
    expect(result.stderr).toContain('not checked: config/default.yaml:');
    expect(result.stdout).toMatch(/^valid: config\/default\.yaml and 1 job in jobs: severity; 2 secrets not checked$/m);
    expect(result.code).toBe(0);

    // Without an environment config, validate cannot pass: init says to write it first.
    await rm(path.join(repo, 'config'), { recursive: true });
    const bare = await tilehouse(['init', '--from-request', 'request.txt', '--name', 'second']);
    expect(bare.code).toBe(0);
    expect(bare.stdout).toContain(
      "\nwrite config/default.yaml (start from tilehouse's config/production.example.yaml), then check it with: tilehouse validate --jobs jobs\n",
    );
  }, 90_000);
});
