import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { redactText } from '../redaction.js';
import { writeFileAtomically } from '../write-file-atomically.js';
import { ConfigError } from '../config/config-error.js';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import { environmentDifferences, jobsSharing } from '../config/import-conflicts.js';
import { chooseJobName, PLACEHOLDER_SINK, renderImportedJob, sinkKindNames } from '../config/import-job.js';
import { importRequest, type ImportedRequest } from '../config/import-request.js';
import { loadEnvironment } from '../config/load-config.js';
import { workspacePaths, type WorkspacePaths } from '../workspace/load-workspace.js';
import { COMMON_HELP, EXIT, parseCommandArgs, UsageError, type CliIo, type Command } from './command.js';
import { countNoun } from '../count-noun.js';

const MAX_INPUT_BYTES = 1024 * 1024;

async function readInput(from: string, io: CliIo): Promise<{ text: string; source: string }> {
  if (from === '-') {
    const stdin = io.stdin ?? process.stdin;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of stdin) {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
      size += buffer.length;
      if (size > MAX_INPUT_BYTES) throw ConfigError.single({ file: 'stdin', field: '', message: 'more than 1 MiB: not a copied request' });
      chunks.push(buffer);
    }
    return { text: Buffer.concat(chunks).toString('utf8'), source: 'stdin' };
  }
  try {
    const text = await readFile(from, 'utf8');
    if (text.length > MAX_INPUT_BYTES) throw ConfigError.single({ file: from, field: '', message: 'more than 1 MiB: not a copied request' });
    return { text, source: from };
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw ConfigError.single({
      file: from,
      field: '--from-request',
      message: `cannot read the file (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
    });
  }
}

async function fileExists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

/** Writes the job; without `force` an existing file is never replaced, even by a concurrent writer. */
async function writeJobFile(file: string, text: string, force: boolean): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  if (!force) {
    try {
      // Redacted as the atomic write redacts (src/redaction.ts): the one step for every file of words.
      await writeFile(file, redactText(text), { flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw refuseOverwrite(file);
      throw error;
    }
    return;
  }
  await writeFileAtomically(file, text);
}

function refuseOverwrite(file: string): ConfigError {
  return ConfigError.single({ file, field: '', message: 'already exists; pass --force to overwrite it, or --name to choose another name' });
}

interface EnvironmentCheck {
  file: string;
  environment?: EnvironmentConfig;
  /** Set when the default config could not be read: the differences cannot be told. */
  unavailable?: string;
}

/**
 * The environment config the request is compared with. One named by --config or $TILEHOUSE_CONFIG
 * must load; the default is optional (a fresh checkout may have none that fits yet).
 */
async function loadEnvironmentForCompare(paths: WorkspacePaths): Promise<EnvironmentCheck> {
  const file = paths.configFile;
  try {
    return { file, environment: await loadEnvironment(file) };
  } catch (error) {
    if (paths.configNamed || !(error instanceof ConfigError)) throw error;
    return { file, unavailable: error.problems[0]?.message ?? error.message };
  }
}

function environmentLines(request: ImportedRequest, check: EnvironmentCheck): string[] {
  if (check.environment === undefined) {
    return [
      `environment config ${check.file} not read (${check.unavailable}); it needs:`,
      `  source.baseUrl    ${request.baseUrl}`,
      `  source.tileParam  ${request.tileParam}`,
    ];
  }
  const why = {
    'source.baseUrl': 'the request went to this host',
    'source.tileParam': `the request carries the tile id in ?${request.tileParam}=`,
  };
  const lines = environmentDifferences(request, check.environment).map(
    ({ field, wanted, now }) => `  ${field.padEnd(16)}  ${wanted}   (now ${now}; ${why[field]})`,
  );
  if (lines.length === 0) return [`environment config ${check.file}: source.baseUrl and source.tileParam already match the request`];
  return [`still to set in ${check.file} (the request differs from the environment config):`, ...lines];
}

export const initCommand: Command = {
  name: 'init',
  help: `Usage: tilehouse init --from-request FILE|- [--name NAME] [--jobs DIR] [--config FILE] [--tile-param NAME] [--force]

Creates a job from the ready-made request the reporting module shows for a tile (tile options ->
export -> API): a curl command, or the URL on the first line and the JSON body after it. Reads
FILE, or standard input for "-". Nothing is run by a shell; a bearer token is never copied.
Writes <jobs>/<name>.yaml with the tile id and the query, then lists what is still to set.

Options:
      --from-request F   the copied request: a file, or - for standard input (required)
      --name NAME        job name (default: from the first visible column header, else the tile id)
${COMMON_HELP}
      --tile-param NAME  the query-string item that carries the tile id, when several could
      --force            overwrite an existing <jobs>/<name>.yaml
  -h, --help             show this help

Example:
  tilehouse init --from-request request.txt --config config/production.example.yaml --name incidents_by_type

The environment config is only compared with the request (host, tile parameter); it is not changed.
Exit codes: 0 written, 2 bad or partial request or usage (nothing written).
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('init', args, {
      'from-request': { type: 'string' },
      name: { type: 'string' },
      'tile-param': { type: 'string' },
      force: { type: 'boolean' },
    });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const from = values['from-request'];
    if (from === undefined) throw UsageError.of('init: --from-request FILE|- is required (see tilehouse init --help)');

    const input = await readInput(from, io);
    const request = importRequest(input.text, { source: input.source, tileParam: values['tile-param'] });
    const name = chooseJobName(request, values.name);
    const paths = workspacePaths(values, io.env);
    const { jobsDirectory } = paths;
    const target = path.join(jobsDirectory, `${name}.yaml`);
    const force = values.force === true;

    if (!force && (await fileExists(target))) throw refuseOverwrite(target);
    const others = await jobsSharing(jobsDirectory, target, name, request.tileId);
    if (others.sameName !== undefined) {
      throw ConfigError.single({
        file: others.sameName,
        field: 'name',
        value: JSON.stringify(name),
        message: 'this job already has the name; choose another with --name (names must be unique)',
      });
    }
    const environment = await loadEnvironmentForCompare(paths);
    const text = renderImportedJob(request, name);
    await writeJobFile(target, text, force);

    const hidden = request.parsedQuery.items.filter((item) => item.hidden === true).length;
    const lines = [
      `wrote ${target}: tile ${request.tileId}, ${countNoun(request.parsedQuery.items.length, 'query item')} (${hidden} hidden)`,
      `still to set in ${target}:`,
      '  schedule          uncomment schedule.cron (5 fields) and schedule.timezone, or leave it out to run only on demand',
      `  sinks             replace the placeholder ${PLACEHOLDER_SINK} sink: one or more of type ${sinkKindNames().join(', ')} (docs/configuration.md)`,
      ...environmentLines(request, environment),
    ];
    for (const file of others.sameTile) lines.push(`note: ${file} exports the same tile`);
    if (request.otherParams.length > 0) {
      const shown = request.otherParams.map((param) => `${param.name}=${param.value}`).join('&');
      lines.push(`note: the URL also had ${shown}; tilehouse sends only ?${request.tileParam}=<tile id>`);
    }
    if (request.droppedCredentials.length > 0) {
      lines.push(`not copied: ${request.droppedCredentials.join(', ')}; tilehouse fetches a fresh token for every run with source.clientId / clientSecret`);
    }
    const validate = `tilehouse validate${paths.configNamed ? ` --config ${paths.configFile}` : ''} --jobs ${jobsDirectory}`;
    // validate needs the environment config (secrets it does not): a step that fails as printed is no next step.
    lines.push(
      environment.environment === undefined
        ? `write ${environment.file} (start from tilehouse's config/production.example.yaml), then check it with: ${validate}`
        : `check it with: ${validate}`,
    );
    io.stdout.write(`${lines.join('\n')}\n`);
    return EXIT.ok;
  },
};
