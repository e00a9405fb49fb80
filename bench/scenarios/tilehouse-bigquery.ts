/**
 * (d) tilehouse into the BigQuery emulator: the real CLI code path (`main(['run', ...])`) in a
 * process of its own, with an emulator client injected as tests inject it; the BigQuery sink,
 * load file and load job are the production ones.
 */
import { BigQuery } from '@google-cloud/bigquery';
import { PassThroughClient } from 'google-auth-library';
import { main } from '../../src/cli.js';
import { scenarioInput } from './scenario-input.js';

export interface BigQueryInput {
  configFile: string;
  jobsDir: string;
  summaryFile: string;
  apiEndpoint: string;
  projectId: string;
}

const input = scenarioInput<BigQueryInput>();
// As test/support/bigquery-emulator.ts builds it: without an auth client a load upload crashes
// the client; its own retries are off, as in production.
const client = new BigQuery({
  projectId: input.projectId,
  apiEndpoint: input.apiEndpoint,
  authClient: new PassThroughClient(),
  retryOptions: { autoRetry: false },
});
const code = await main(
  ['run', '--config', input.configFile, '--jobs', input.jobsDir, '--summary-json', input.summaryFile],
  {
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
  },
  { sinkOptions: { bigqueryClient: client } },
);
// The client keeps idle sockets open; the run is over.
process.exit(code);
