import { z } from 'zod';
import { googleApiEndpointSchema } from './google-api-endpoint.js';

/**
 * Where OpenLineage events go, in the shape the OpenLineage clients' YAML (`openlineage.yml`,
 * `OPENLINEAGE_CONFIG`) gives a transport, key for key, so one file serves tilehouse and the
 * Python client alike: `http` (Marquez and other consumers), `file` (one event a line), `console`,
 * `gcplineage` (Google's Data Lineage API). docs/lineage.md is the reference.
 */
const httpTransportSchema = z
  .object({
    type: z.literal('http'),
    url: z.url().describe('The consumer, e.g. http://marquez:5000'),
    endpoint: z.string().default('api/v1/lineage').describe('The path appended to url (default api/v1/lineage)'),
    timeout: z
      .number()
      .positive()
      .max(60)
      .default(5)
      .describe('Seconds one event may take to send (default 5): also the longest the exit waits for the events still in flight'),
    compression: z.enum(['gzip']).optional().describe('gzip: the body is sent gzip-compressed'),
    auth: z
      .object({ type: z.literal('api_key'), apiKey: z.string().min(1).describe('Sent as Authorization: Bearer <apiKey>') })
      .strict()
      .optional(),
  })
  .strict();

const fileTransportSchema = z
  .object({
    type: z.literal('file'),
    log_file_path: z.string().min(1).describe('The file events are appended to, one JSON event a line'),
    // The clients' append: false writes a file per event; tilehouse only appends.
    append: z.literal(true).default(true).describe('Always true: events are appended to one file'),
  })
  .strict();

const consoleTransportSchema = z.object({ type: z.literal('console') }).strict();

const googleLineageTransportSchema = z
  .object({
    type: z.literal('gcplineage'),
    project_id: z.string().min(1).describe('The Google Cloud project whose Data Lineage receives the events'),
    location: z.string().min(1).default('us').describe('The Data Lineage location (region or multi-region), default us'),
    timeout: z.number().positive().max(60).default(5).describe('Seconds one event may take to send (default 5)'),
    apiEndpoint: googleApiEndpointSchema('Data Lineage', 'https://datalineage.googleapis.com').optional(),
  })
  .strict();

export const lineageTransportSchema = z.discriminatedUnion('type', [
  httpTransportSchema,
  fileTransportSchema,
  consoleTransportSchema,
  googleLineageTransportSchema,
]);

export type LineageTransportConfig = z.infer<typeof lineageTransportSchema>;

/** The environment file's `lineage:` section; the OPENLINEAGE_* variables and OPENLINEAGE_CONFIG override it. */
export const lineageSchema = z
  .object({
    namespace: z
      .string()
      .min(1)
      .default('tilehouse')
      .describe("The OpenLineage namespace of tilehouse's jobs (OPENLINEAGE_NAMESPACE overrides it); default tilehouse"),
    transport: lineageTransportSchema.optional().describe('Where events go; none (and no OPENLINEAGE_URL or OPENLINEAGE_CONFIG): lineage is off'),
    disabled: z.boolean().default(false).describe('true: no events, whatever else is set (as OPENLINEAGE_DISABLED=true)'),
  })
  .strict()
  .superRefine((section, ctx) => {
    // The environment file is not a secret (it is a ConfigMap on Kubernetes): the key comes from the environment.
    if (section.transport?.type === 'http' && section.transport.auth !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['transport', 'auth'],
        message: 'an API key is a secret and is refused here (the value is not shown): set OPENLINEAGE_API_KEY, or mount an OPENLINEAGE_CONFIG file',
      });
    }
    // A password in the URL is a secret in a ConfigMap too, and the clients disagree on using it (docs/lineage.md).
    if (section.transport?.type === 'http' && URL.canParse(section.transport.url)) {
      const url = new URL(section.transport.url);
      if (url.username !== '' || url.password !== '')
        ctx.addIssue({
          code: 'custom',
          path: ['transport', 'url'],
          input: '(not shown)',
          message:
            'a user or password in the URL is refused (the value is not shown): remove it and set OPENLINEAGE_API_KEY (sent as Authorization: Bearer <key>) from a Secret',
        });
    }
  });

export type LineageConfig = z.infer<typeof lineageSchema>;
