import { describe, expect, it } from 'vitest';
import { IMAGE_TEST_TOOLS, imageTestBlocker, imageTestMode } from '../support/container-image.js';

/** When the image test runs, skips, or fails: a skip must never hide a broken CI machine. */
describe('imageTestBlocker', () => {
  const everything = () => true;

  it('lets root with every tool run the image test', () => {
    expect(imageTestBlocker({ uid: 0, installed: everything })).toBeNull();
  });

  it('names root as the reason for any other user, uid 10001 included', () => {
    expect(imageTestBlocker({ uid: 10001, installed: everything })).toMatch(/must run as root/);
  });

  it.each(IMAGE_TEST_TOOLS.map((tool) => [tool]))('names %s when it alone is missing', (missing) => {
    expect(imageTestBlocker({ uid: 0, installed: (tool) => tool !== missing })).toBe(`${missing} is not installed (apt-get install -y buildah debootstrap)`);
  });
});

describe('imageTestMode', () => {
  it('runs when nothing blocks, under CI or not', () => {
    expect(imageTestMode(null, {})).toEqual({ run: true });
    expect(imageTestMode(null, { CI: 'true' })).toEqual({ run: true });
  });

  it('skips with the reason outside CI', () => {
    expect(imageTestMode('buildah is not installed', {})).toEqual({ run: false, reason: 'buildah is not installed' });
    // An empty CI (as tests of local behaviour set it) is not CI.
    expect(imageTestMode('buildah is not installed', { CI: '' })).toEqual({ run: false, reason: 'buildah is not installed' });
  });

  it('fails under CI instead of skipping, naming what is missing', () => {
    expect(() => imageTestMode('debootstrap is not installed', { CI: 'true' })).toThrow(
      /CI is set but the image tests cannot run: debootstrap is not installed/,
    );
  });
});
