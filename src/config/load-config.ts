// src/config/, module by module (ARCHITECTURE.md gives the folder one paragraph):
// YAML files → zod-validated `EnvironmentConfig` / `LoadedJob`: `job-schema.ts` (one tile: the query as the
// spec writes it, schedule, sinks, column overrides, backfill and incremental sections),
// `environment-schema.ts` (source connection, sink defaults, run limits), `load-config.ts` (the files read
// together, the effective timezone, plain http only to loopback), `read-yaml.ts` + `config-error.ts` (every
// problem located: file, line, field path, value; `config_invalid`), `secrets.ts` (the client credentials from
// `${ENV}` or a mounted file, newline-trimmed), `json-schema.ts` (the job and environment JSON Schemas for
// editors), `gcs-url.ts` (`gs://` URL checks), `s3-url.ts` (`s3://` URL checks), each store's grammar listed in
// `object-store-urls.ts`, one line a store; `google-api-endpoint.ts`
// (`sinks.bigquery.apiEndpoint`, `sinks.gcs.apiEndpoint`: an origin, https or loopback http); the request
// importer behind `init`: `import-request.ts` (the ready-made API request the reporting module shows for a
// tile, as a curl command or URL + body, checked to be a tile export), `import-shell-words.ts` (a pasted shell
// command split into words as a POSIX shell would, nothing expanded), `import-curl.ts` (those words as an HTTP
// request; any option that could change it refused by name), `import-job.ts` (the text of `jobs/<name>.yaml`
// from it, its placeholder sink and the sink kinds it offers, from the job schema's union),
// `import-conflicts.ts` (what the import meets in the workspace: job files with its name or tile, the source
// settings that differ); each sink kind's config schema and what an incremental job requires of it
// (`csv-sink-schema.ts`, `bigquery-sink-schema.ts`: `takesWindows`, the write modes a windowed BigQuery sink
// may have, `parquet-sink-schema.ts`), `publish-guard-schema.ts` (every kind's `guard:` and
// `sinks.<kind>.guard`, their defaults and how they merge), assembled into the job schema's sink union in
// `sink-schemas.ts`, each reporting a `SinkIssue` (`sink-issue.ts`, its own module so that the union and the
// kinds' files do not import each other) (config sits below sinks, so it cannot ask the sink registry; each
// kind's descriptor names its schema, and `test/sinks/registry.test.ts` checks the two agree);
// `window-rules.ts` (what a windowed job requires of its query, once: the window item found by ref, else
// header, `findItemIndex`, also the export seam's; a datetime item; a visible bucket column; one file per
// window, `{date}`, for a file sink), asked by the job schema for an incremental job and by
// `pipeline/windows/` before a backfill

import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type ConfigProblem } from './config-error.js';
import { environmentSchema, type EnvironmentConfig } from './environment-schema.js';
import { jobSchema, type JobConfig } from './job-schema.js';
import { readYamlFile } from './read-yaml.js';

/** A job as the pipeline uses it: validated, with its file and the effective timezone resolved. */
export interface LoadedJob extends JobConfig {
  file: string;
  timezone: string;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

function isLoopback(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/**
 * Plain http exposes the client secret and every token on the wire, so it is only accepted for
 * loopback (the sandbox) unless the environment explicitly opts in.
 */
function insecureUrlProblems(config: EnvironmentConfig, file: string): ConfigProblem[] {
  if (config.source.allowInsecureHttp) return [];
  const problems: ConfigProblem[] = [];
  for (const field of ['baseUrl', 'authUrl'] as const) {
    const url = new URL(config.source[field]);
    if (url.protocol === 'https:') continue;
    if (url.protocol === 'http:' && isLoopback(url.hostname)) continue;
    problems.push({
      file,
      field: `source.${field}`,
      value: JSON.stringify(config.source[field]),
      message:
        url.protocol === 'http:'
          ? 'http:// is refused for non-loopback hosts (it would send the secret in clear text); use https:// or set source.allowInsecureHttp: true'
          : 'only https:// (or http:// on loopback) is supported',
    });
  }
  return problems;
}

export async function loadEnvironment(file: string): Promise<EnvironmentConfig> {
  const config = await readYamlFile(file, environmentSchema);
  const problems = insecureUrlProblems(config, file);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

export async function loadJob(file: string): Promise<LoadedJob> {
  const job = await readYamlFile(file, jobSchema);
  return { ...job, file, timezone: job.timezone ?? job.schedule?.timezone ?? 'UTC' };
}

/**
 * Loads every `*.yaml` / `*.yml` in `directory` (sorted, so runs are reproducible). All files are
 * validated before anything runs: one bad file fails the whole load with every problem listed.
 */
export async function loadJobs(directory: string): Promise<LoadedJob[]> {
  const files = await jobFilesIn(directory);
  if (files.length === 0) {
    throw ConfigError.single({ file: directory, field: '', message: 'no job files (*.yaml) found' });
  }

  const problems: ConfigProblem[] = [];
  const jobs: LoadedJob[] = [];
  for (const file of files) {
    try {
      jobs.push(await loadJob(file));
    } catch (error) {
      if (error instanceof ConfigError) problems.push(...error.problems);
      else throw error;
    }
  }

  const fileByName = new Map<string, string>();
  for (const job of jobs) {
    const other = fileByName.get(job.name);
    if (other !== undefined) {
      problems.push({
        file: job.file,
        field: 'name',
        value: JSON.stringify(job.name),
        message: `the same name is used by ${other}; names must be unique (they name files and tables)`,
      });
    }
    fileByName.set(job.name, job.file);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return jobs;
}

/** The job files of `directory`: every `*.yaml` / `*.yml`, sorted; a directory that cannot be read is a ConfigError. */
export async function jobFilesIn(directory: string): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(directory);
  } catch (error) {
    throw ConfigError.single({
      file: directory,
      field: '',
      message: `cannot read jobs directory (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
    });
  }
  return entries
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()
    .map((name) => path.join(directory, name));
}

/** Picks jobs by name for `--job`; an unknown name is a usage error listing the known ones. */
export function selectJobs(jobs: readonly LoadedJob[], names: readonly string[], jobsDirectory: string): LoadedJob[] {
  if (names.length === 0) return [...jobs];
  const byName = new Map(jobs.map((job) => [job.name, job]));
  const unknown = names.filter((name) => !byName.has(name));
  if (unknown.length > 0) {
    throw ConfigError.single({
      file: jobsDirectory,
      field: '--job',
      value: JSON.stringify(unknown.join(', ')),
      message: `no such job; known: ${[...byName.keys()].join(', ')}`,
    });
  }
  // `--job x --job x` names one job: it runs once (twice would race two runs to one target).
  return [...new Set(names)].map((name) => byName.get(name)!);
}
