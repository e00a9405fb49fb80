import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { icebergSparkOrSkip } from '../../support/iceberg-spark.js';
import { tempDirEachTest } from '../../support/temp-dir-hooks.js';

describe('icebergSparkOrSkip', () => {
  const nowhere = '/nonexistent/iceberg-spark';
  const temp = tempDirEachTest('tilehouse-spark-install-');

  it('fails under CI when Spark is not installed, so the interop tests never pass as skipped', () => {
    expect(() => icebergSparkOrSkip({ CI: 'true' }, nowhere)).toThrow(/npm run setup:iceberg-spark/);
  });

  it('skips (null) outside CI when Spark is not installed', () => {
    expect(icebergSparkOrSkip({}, nowhere)).toBeNull();
  });

  it("takes an install only once the installer's stamp is written, with every jar of jars/", async () => {
    const home = temp.path;
    await mkdir(join(home, 'jars'), { recursive: true });
    await writeFile(join(home, 'jars', 'iceberg-spark-runtime.jar'), '');
    await writeFile(join(home, 'jars', 'postgresql.jar'), '');
    await writeFile(join(home, 'jars', '.pom.sha256'), '');
    expect(icebergSparkOrSkip({}, home)).toBeNull();
    await writeFile(join(home, '.install.sha256'), 'x\n');
    expect(icebergSparkOrSkip({ ICEBERG_SPARK_HOME: home }, nowhere)).toEqual({
      python: join(home, 'venv', 'bin', 'python'),
      jars: [join(home, 'jars', 'iceberg-spark-runtime.jar'), join(home, 'jars', 'postgresql.jar')],
    });
  });
});

describe('scripts/install-iceberg-spark.sh', () => {
  it('pins every version exactly and is part of setup:tools', async () => {
    const requirements = (await readFile('scripts/iceberg-spark/requirements.txt', 'utf8')).split('\n').filter((line) => line !== '' && !line.startsWith('#'));
    expect(requirements).toEqual(['pyspark==3.5.9', 'py4j==0.10.9.7']);
    const pom = await readFile('scripts/iceberg-spark/pom.xml', 'utf8');
    const versions = [...pom.matchAll(/<artifactId>([^<]+)<\/artifactId>\s*<version>([^<]+)<\/version>/g)].map((match) => `${match[1]}:${match[2]}`);
    expect(versions).toEqual(['iceberg-spark-jars:1', 'iceberg-spark-runtime-3.5_2.12:1.10.1', 'iceberg-aws-bundle:1.10.1', 'postgresql:42.7.8']);
    const scripts = (JSON.parse(await readFile('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['setup:iceberg-spark']).toBe('bash scripts/install-iceberg-spark.sh');
    expect(scripts['setup:tools']).toContain('npm run -s setup:iceberg-spark');
  });

  it('is a no-op when the pinned install is in place (the shared one is)', async (context) => {
    if (icebergSparkOrSkip() === null) context.skip('Spark is not installed here');
    const { stdout } = await promisify(execFile)('bash', ['scripts/install-iceberg-spark.sh'], { env: { ...process.env } });
    expect(stdout).toMatch(/already installed .*nothing to do/);
  }, 60_000);
});
