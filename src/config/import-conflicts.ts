import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import type { EnvironmentConfig } from './environment-schema.js';
import type { ImportedRequest } from './import-request.js';
import { jobFilesIn } from './load-config.js';

/**
 * What an imported request meets in the workspace it is written into (`tilehouse init`): job files
 * that already take its name or export its tile, and the environment settings it needs that
 * differ. Decided here, beside the importer and the loader; the command only prints them.
 */

export interface SharedJobs {
  /** The job file that already has the name: a second would break every run. */
  sameName?: string;
  /** Job files that export the same tile (allowed, worth a note). */
  sameTile: string[];
}

/**
 * The job files of `directory` (other than `target`) that use `name` or `tile`. Read leniently: a
 * file that is not valid YAML or not a valid job still counts by the name and tile it writes, and
 * one that cannot be read is skipped (`tilehouse validate` reports it; it does not block an import).
 */
export async function jobsSharing(directory: string, target: string, name: string, tile: string): Promise<SharedJobs> {
  const shared: SharedJobs = { sameTile: [] };
  let files: string[];
  try {
    files = await jobFilesIn(directory);
  } catch {
    return shared; // no jobs directory yet: the import creates it
  }
  for (const file of files) {
    if (path.resolve(file) === path.resolve(target)) continue;
    let data: unknown;
    try {
      data = parse(await readFile(file, 'utf8'));
    } catch {
      continue;
    }
    if (data === null || typeof data !== 'object') continue;
    const job = data as { name?: unknown; tile?: unknown };
    if (job.name === name) shared.sameName = file;
    if (job.tile === tile) shared.sameTile.push(file);
  }
  return shared;
}

export interface EnvironmentDifference {
  field: 'source.baseUrl' | 'source.tileParam';
  /** What the request needs. */
  wanted: string;
  /** What the environment config has now. */
  now: string;
}

/** The source settings of `environment` that differ from what the request needs; empty when they match. */
export function environmentDifferences(request: ImportedRequest, environment: EnvironmentConfig): EnvironmentDifference[] {
  const { source } = environment;
  const differences: EnvironmentDifference[] = [];
  if (normalizedBaseUrl(source.baseUrl) !== request.baseUrl) differences.push({ field: 'source.baseUrl', wanted: request.baseUrl, now: source.baseUrl });
  if (source.tileParam !== request.tileParam) differences.push({ field: 'source.tileParam', wanted: request.tileParam, now: source.tileParam });
  return differences;
}

function normalizedBaseUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
