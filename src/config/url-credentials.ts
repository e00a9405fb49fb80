import type { z } from 'zod';

/**
 * A URL setting that is not a secret (a Pushgateway, a catalog's URI, an S3 or OTLP endpoint) is
 * printed by the errors and logs that name where a request went, and kept in ConfigMaps and pod
 * specs: a password in its user info (`https://user:password@host`) would travel with it. Such a
 * URL is refused, the value not shown, pointing to where the credential goes instead. A user
 * without a password names no secret and stays allowed.
 */
export function urlPasswordProblem(value: string, useInstead: string): string | undefined {
  if (!URL.canParse(value)) return undefined;
  if (new URL(value).password === '') return undefined;
  return `a password in the URL (user:password@host) is refused (the value is not shown): remove it; ${useInstead}`;
}

/** The refinement of a URL field's schema: `urlPasswordProblem` as a zod issue on the field itself. */
export function refusingUrlPassword(useInstead: string): (value: string, ctx: z.RefinementCtx) => void {
  return (value, ctx) => {
    const problem = urlPasswordProblem(value, useInstead);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', input: '(not shown)', message: problem });
  };
}
