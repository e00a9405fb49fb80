import { describe, expect, it } from 'vitest';
import { DockerfileReadError, envAssignments, imageNodeOf } from '../../bench/support/image-node.js';

const dockerfile = (runtime: string) => `# syntax=docker/dockerfile:1
FROM node:24 AS build
ENV NODE_OPTIONS=--build-stage-only
ENTRYPOINT ["node", "--build-flag", "build.js"]
FROM node:24 AS runtime
${runtime}
`;

describe('imageNodeOf', () => {
  it('takes NODE_OPTIONS from the last stage only, quoted with spaces, across continuation lines', () => {
    const text = dockerfile(
      ['# a comment between', 'ENV NODE_ENV=production \\', '    NODE_OPTIONS="--a=1 --b=2" \\', '    TMPDIR=/tmp', 'ENTRYPOINT ["node", "/app/x.js"]'].join(
        '\n',
      ),
    );
    expect(imageNodeOf(text)).toEqual({ nodeOptions: '--a=1 --b=2', nodeArgs: [] });
  });

  it('reads node flags between node and the script, and a later ENV overriding an earlier one', () => {
    const text = dockerfile(
      [
        'ENV NODE_OPTIONS=--first',
        'ENV NODE_OPTIONS=--second',
        'ENTRYPOINT ["/usr/local/bin/node", "--liftoff-only", "--x=1", "/app/dist/bundle/tilehouse.js"]',
        'CMD ["run"]',
      ].join('\n'),
    );
    expect(imageNodeOf(text)).toEqual({ nodeOptions: '--second', nodeArgs: ['--liftoff-only', '--x=1'] });
  });

  it('accepts an image without NODE_OPTIONS (the baseline of a checkout that had none)', () => {
    expect(imageNodeOf(dockerfile('ENV TMPDIR=/tmp\nENTRYPOINT ["node", "main.js"]'))).toEqual({ nodeOptions: undefined, nodeArgs: [] });
  });

  it('refuses an ENTRYPOINT it cannot run as the image does, naming the file and the instruction', () => {
    expect(() => imageNodeOf(dockerfile('ENTRYPOINT node main.js'), 'x/Dockerfile')).toThrow(
      new DockerfileReadError('x/Dockerfile', 'ENTRYPOINT node main.js is not the exec form (a JSON array)'),
    );
    expect(() => imageNodeOf(dockerfile('ENTRYPOINT ["python", "main.py"]'))).toThrow(/does not start node/);
    expect(() => imageNodeOf(dockerfile('ENTRYPOINT ["node", "--inspect"]'))).toThrow(/names no script/);
    expect(() => imageNodeOf(dockerfile('CMD ["run"]'))).toThrow(/no ENTRYPOINT/);
    // Asserted outside a catch block, which a Dockerfile read without a throw would skip.
    expect(() => imageNodeOf('FROM x\n')).toThrow(expect.objectContaining({ code: 'BENCH_DOCKERFILE_UNREADABLE' }));
  });
});

describe('envAssignments', () => {
  it('reads several pairs, quoted values with escaped quotes, empty values and the legacy one-variable form', () => {
    expect(envAssignments('A=1 B="two words" C="say \\"hi\\"" D=')).toEqual({ A: '1', B: 'two words', C: 'say "hi"', D: '' });
    expect(envAssignments('NODE_OPTIONS --max-old-space-size=2048 --y')).toEqual({ NODE_OPTIONS: '--max-old-space-size=2048 --y' });
  });
});
