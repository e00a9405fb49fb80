// `node --import ./test/support/record-imports.mjs …`: appends every module URL the process
// resolves to the file named by $TILEHOUSE_RECORD_IMPORTS, so a test can tell which packages a run
// loaded (cold start: a local CSV run must not load the Cloud Storage or BigQuery clients).
import { register } from 'node:module';

const file = process.env.TILEHOUSE_RECORD_IMPORTS;
if (file) {
  const hooks = `
    import { appendFileSync } from 'node:fs';
    export async function resolve(specifier, context, next) {
      const resolved = await next(specifier, context);
      appendFileSync(${JSON.stringify(file)}, resolved.url + '\\n');
      return resolved;
    }`;
  register(`data:text/javascript,${encodeURIComponent(hooks)}`);
}
