import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runCli, sandboxEnv, writeWorkspace, type Workspace } from '../../support/cli-harness.js';
import { duckdb } from './encoder/duckdb-read-back.js';
import { addParquetDirectory } from './parquet-test-support.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';

/**
 * The SQL README.md and docs/parquet.md show for reading the Parquet example (no DuckDB CLI is
 * installed, so test/docs cannot run it as a command): the example job run against the sandbox,
 * then each DuckDB query as written, on its output; the BigQuery external table's URIs against the
 * job's path template.
 */

const EXAMPLE = 'examples/parquet/jobs/incidents_lake.yaml';
const DOCUMENTS = ['README.md', 'docs/parquet.md'];

/** The statements of every ```sql block of a document. */
async function sqlStatements(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8');
  const blocks = [...text.matchAll(/^```sql\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
  return blocks.flatMap((block) =>
    block
      .split(/;\s*$/m)
      .map((statement) => statement.trim())
      .filter((statement) => statement !== ''),
  );
}

const fixture = sandboxAndRootForAll({ incidents: 400 });
let workspace: Workspace;
let job: { name: string; sinks: Array<{ type: string; path: string }> };
beforeAll(async () => {
  job = parse(await readFile(EXAMPLE, 'utf8')) as typeof job;
  workspace = await writeWorkspace(fixture.root, fixture.sandbox, [job as unknown as Record<string, unknown>]);
  await addParquetDirectory(workspace);
  const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(fixture.sandbox) });
  expect(result.exitCode, result.stderr).toBe(0);
});

describe('the Parquet SQL the documents show', () => {
  it.each(DOCUMENTS)("%s: DuckDB runs each query on the example job's files, typed", async (document) => {
    const queries = (await sqlStatements(document)).filter((statement) => statement.includes('read_parquet('));
    expect(queries.length).toBeGreaterThan(0);
    for (const query of queries) {
      expect(query).toContain("'out/");
      const reader = await (await duckdb()).runAndReadAll(query.replaceAll("'out/", `'${workspace.outDir}/`));
      const rows = reader.getRowObjectsJS();
      expect(rows.length, query).toBeGreaterThan(0);
      expect(reader.columnNames()).toEqual(['day', 'severity', 'incidents', 'impact_hours']);
      expect(reader.columnTypes().map(String)).toEqual(['DATE', 'VARCHAR', 'BIGINT', 'DECIMAL(38,9)']);
      expect(rows.reduce((sum, row) => sum + Number(row['incidents']), 0)).toBeGreaterThan(10);
    }
  });

  it.each(DOCUMENTS)('%s: the BigQuery external table reads the objects the example job writes under gs://acme-lake/tilehouse', async (document) => {
    // BigQuery's DDL (OPTIONS (...)); the S3 readers' tables (Athena, Redshift Spectrum) are docs/s3.md's, checked there.
    const tables = (await sqlStatements(document)).filter((statement) => statement.startsWith('CREATE EXTERNAL TABLE') && statement.includes('OPTIONS ('));
    expect(tables.length).toBeGreaterThan(0);
    const [sink] = job.sinks;
    const objects = `gs://acme-lake/tilehouse/${sink!.path.replace('{name}', job.name).replace('{date}', '*')}`;
    for (const table of tables) {
      expect(table).toContain("format = 'PARQUET'");
      expect(table).toContain(`uris = ['${objects}']`);
    }
  });
});
