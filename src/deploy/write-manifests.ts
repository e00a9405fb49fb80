import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomically } from '../write-file-atomically.js';
import type { ManifestPlan } from './plan-manifests.js';

export interface StaleFile {
  file: string;
  reason: 'missing' | 'differs' | 'no longer generated' | 'placeholder';
}

async function filesBelow(directory: string): Promise<string[]> {
  try {
    const entries = await readdir(directory, { recursive: true, withFileTypes: true });
    return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
  } catch {
    return [];
  }
}

/** Generated files that are absent, different, or left over from a job that is gone. Writes nothing. */
export async function staleFiles(plan: ManifestPlan): Promise<StaleFile[]> {
  const stale: StaleFile[] = [];
  for (const { file, text, once } of plan.files) {
    let current: string | undefined;
    try {
      current = await readFile(file, 'utf8');
    } catch {
      current = undefined;
    }
    if (current === undefined) stale.push({ file, reason: 'missing' });
    else if (once !== undefined) {
      // The user's file from now on: only the shipped placeholder is replaced.
      if (once.replaces !== undefined && current === once.replaces) stale.push({ file, reason: 'placeholder' });
    } else if (current !== text) stale.push({ file, reason: 'differs' });
  }
  const planned = new Set(plan.files.map(({ file }) => path.resolve(file)));
  for (const file of await filesBelow(plan.generatedDirectory)) {
    if (!planned.has(path.resolve(file))) stale.push({ file, reason: 'no longer generated' });
  }
  return stale;
}

/** Writes every planned file (each by rename, so a reader never sees half a file) and removes leftovers. */
export async function writeManifests(plan: ManifestPlan): Promise<StaleFile[]> {
  const stale = await staleFiles(plan);
  for (const { file, reason } of stale) {
    if (reason === 'no longer generated') {
      await rm(file, { force: true });
      continue;
    }
    const text = plan.files.find((planned) => planned.file === file)!.text;
    await mkdir(path.dirname(file), { recursive: true });
    await writeFileAtomically(file, text);
  }
  return stale;
}
