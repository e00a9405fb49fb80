import { stringify } from 'yaml';
import { APP, CREDENTIALS_SECRET, NAMESPACE, SERVICE_ACCOUNT } from './deploy-settings.js';

/**
 * The hand-editable files of a kustomize base that `tilehouse k8s` writes once, when absent:
 * kustomization.yaml (the image, the namespace, whatever patches the user adds), namespace.yaml and
 * serviceaccount.yaml (its Workload Identity annotation names the user's project). Unlike the
 * CronJobs and generated/, they are never rewritten: a user's edits are theirs to keep.
 *
 * The one exception is the placeholder kustomization this repository ships in k8s/ (so that
 * `kubectl apply -k k8s/` on an untouched clone deploys nothing): `tilehouse k8s` replaces it,
 * but only while it is byte-identical to PLACEHOLDER_KUSTOMIZATION. An edited placeholder is the
 * user's file too.
 */

/** The registry image a new base deploys until the user edits `images:` of its kustomization. */
export const PLACEHOLDER_IMAGE = { newName: 'REGION-docker.pkg.dev/PROJECT/REPOSITORY/tilehouse', newTag: '0.1.0' } as const;

export const PLACEHOLDER_KUSTOMIZATION = `# Deploys nothing yet: this base is empty on purpose, so that \`kubectl apply -k k8s/\` on a fresh
# clone does not start the demo's CronJobs against an example tenant.
#
# Write the base of your own jobs here first:
#   tilehouse k8s --config config/production.yaml --jobs jobs --out k8s/cronjobs.yaml
# It replaces this file (while it is unchanged) with a kustomization that lists the namespace, the
# service account, the ConfigMaps and the CronJobs it writes beside it; see k8s/README.md.
# The demo's own generated base is an example apart: examples/k8s-demo/.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: []
`;

/** The kustomization of a new base: the files `tilehouse k8s` writes, and the image to deploy. */
export function scaffoldKustomization(cronJobsFile: string, command: string): string {
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    namespace: NAMESPACE,
    resources: ['namespace.yaml', 'serviceaccount.yaml', 'generated', cronJobsFile],
    images: [{ name: APP, ...PLACEHOLDER_IMAGE }],
  };
  return [
    '# The kustomize base of tilehouse on Kubernetes; deploy it with kubectl apply -k on this directory.',
    `# Written by \`${command}\` because it was absent.`,
    '# Written once: `tilehouse k8s` never rewrites this file, namespace.yaml or',
    '# serviceaccount.yaml, so edit them freely. It rewrites cronjobs.yaml, backfill-job.yaml and',
    '# generated/ on every run.',
    '# Not listed on purpose: backfill-job.yaml (a template; as a resource it would start a backfill on',
    `# every apply) and the Secret ${CREDENTIALS_SECRET} (created by hand, never committed).`,
    '# images: set your registry image here, then run `tilehouse k8s` again: the backfill template',
    '# takes its image from this entry (kustomize does not rewrite it, it is not a resource).',
    stringify(kustomization, { lineWidth: 0 }),
  ].join('\n');
}

export function scaffoldNamespace(): string {
  return [
    '# Written once by `tilehouse k8s`, never rewritten: yours to edit.',
    stringify(
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name: NAMESPACE,
          labels: {
            'app.kubernetes.io/name': APP,
            // Every pod tilehouse generates meets "restricted" (test/deploy/pod-security.test.ts).
            'pod-security.kubernetes.io/enforce': 'restricted',
          },
        },
      },
      { lineWidth: 0 },
    ),
  ].join('\n');
}

/**
 * `annotations`: what the configured sinks need of the account besides Workload Identity's (an
 * s3:// target: the IAM role IRSA maps it to on EKS, from the sink registry).
 */
export function scaffoldServiceAccount(annotations: Record<string, string> = {}): string {
  const irsa = Object.keys(annotations).some((name) => name.startsWith('eks.amazonaws.com/'));
  return [
    '# Written once by `tilehouse k8s`, never rewritten: yours to edit.',
    '# The identity of every tilehouse pod. On GKE, Workload Identity maps it to a Google service account',
    '# (BigQuery and Cloud Storage access) without any key file: replace PROJECT below, then grant the',
    '# mapping once:',
    `#   gcloud iam service-accounts add-iam-policy-binding ${SERVICE_ACCOUNT}@PROJECT.iam.gserviceaccount.com \\`,
    '#     --role roles/iam.workloadIdentityUser \\',
    `#     --member "serviceAccount:PROJECT.svc.id.goog[${NAMESPACE}/${SERVICE_ACCOUNT}]"`,
    ...(irsa
      ? [
          '# The config writes to S3: on EKS, IRSA maps this account to an IAM role (no key in any file):',
          "# replace ACCOUNT_ID and the role name below; the role trusts the cluster's OIDC provider for",
          `# system:serviceaccount:${NAMESPACE}:${SERVICE_ACCOUNT} and allows the actions docs/s3.md lists.`,
          '# With EKS Pod Identity instead, delete the annotation and create the association.',
        ]
      : []),
    stringify(
      {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: {
          name: SERVICE_ACCOUNT,
          labels: { 'app.kubernetes.io/name': APP },
          annotations: { 'iam.gke.io/gcp-service-account': `${SERVICE_ACCOUNT}@PROJECT.iam.gserviceaccount.com`, ...annotations },
        },
      },
      { lineWidth: 0 },
    ),
  ].join('\n');
}
