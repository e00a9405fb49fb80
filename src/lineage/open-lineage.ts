import packageJson from '../../package.json' with { type: 'json' };
import type { LineageConfig } from '../config/lineage-schema.js';
import type { Logger } from '../log.js';
import { NO_LINEAGE, useLineage, type Lineage } from './lineage.js';
import { lineageSettingsOf } from './lineage-settings.js';

export interface LineageOpenOptions {
  env: NodeJS.ProcessEnv;
  /** The environment file's `lineage:` section. */
  section: LineageConfig | undefined;
  logger: Logger;
  /** Where the console transport writes (stderr). */
  writeConsole(line: string): void;
  /** The run's nominal window (`--window-start` / `--window-end`), for the nominal time facet. */
  nominal?: { start: string; end?: string | undefined } | undefined;
}

/**
 * Opens the process's lineage: the no-op when nothing turns it on (the implementation, its
 * transports and their clients are not imported then), else the OpenLineage emitter, loaded here
 * by a dynamic import and installed as `lineage()`. Invalid settings throw `lineage_config_invalid`
 * (exit 2) before anything ran.
 */
export async function openLineage(options: LineageOpenOptions): Promise<Lineage> {
  const settings = await lineageSettingsOf(options.env, options.section);
  if (settings === undefined) return NO_LINEAGE;
  const [{ OpenLineageEmitter }, { transportOf }] = await Promise.all([import('./openlineage-emitter.js'), import('./transport-of.js')]);
  const transport = await transportOf(settings.transport, { writeConsole: options.writeConsole, env: options.env });
  const opened = new OpenLineageEmitter(
    transport,
    { version: packageJson.version, namespace: settings.namespace, parent: settings.parent, nominal: options.nominal },
    options.logger,
  );
  useLineage(opened);
  return opened;
}

/** Sends what is left within the bound and puts the no-op back. Never throws. */
export async function closeLineage(opened: Lineage): Promise<void> {
  if (!opened.enabled) return;
  await opened.shutdown();
  useLineage(NO_LINEAGE);
}
