/**
 * Whether this run is CI: the one reading of `CI` for every test and helper. Set to anything but
 * empty, `0` or `false` (CI=true, CI=1 as some runners set it): CI. Tests of local behaviour set
 * `CI: ''` for their children, which this reads as not CI.
 */
export function underCi(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env.CI;
  return value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';
}
