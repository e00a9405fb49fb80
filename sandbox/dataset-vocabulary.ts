/**
 * The values the generated incidents are drawn from. The spec shows `INVESTIGATING` on incidents
 * and a lower-case `resolved` used as a filter value, so the sandbox mixes both spellings on
 * purpose: an export must carry status strings through unchanged, whatever their case.
 */
export const STATUSES = ['INVESTIGATING', 'identified', 'mitigated', 'resolved'] as const;

/** "Configured in the preferences of the tenant's instance" per the spec; these are the sandbox tenant's. */
export const INCIDENT_TYPES = ['Outage', 'Degradation', 'Security', 'Data loss', 'Maintenance'] as const;
export const INCIDENT_TYPE_WEIGHTS = [0.25, 0.4, 0.1, 0.05, 0.2] as const;

/** 0 is most severe; real tenants have few SEV0s and many SEV3s. */
export const SEVERITY_WEIGHTS = [0.05, 0.15, 0.35, 0.45] as const;

/** At most 8 labels: an incident's tags are stored as one byte of bits. */
export const TAG_LABELS = ['customer-facing', 'database', 'network', 'payments', 'third-party', 'deploy', 'kubernetes', 'régression'] as const;

/** Values of the postmortem custom field `custom_key` (the root-cause category). */
export const ROOT_CAUSES = ['config_change', 'code_defect', 'capacity', 'third_party', 'infrastructure', 'unknown'] as const;

/** Values of the postmortem custom field `detection_method`. */
export const DETECTION_METHODS = ['monitoring', 'customer_report', 'internal_report', 'synthetic_check'] as const;

const COMPONENTS = [
  'Checkout API',
  'Login service',
  'Search',
  'Payments gateway',
  'Notification queue',
  'Primary database',
  'CDN edge',
  'Mobile app backend',
  'Billing batch job',
  'Status page',
  'Webhook delivery',
  'Data warehouse sync',
] as const;

const SYMPTOMS = [
  'returning 5xx errors',
  'latency above SLO',
  'unavailable in eu-west-1',
  'timing out for some customers',
  'dropping messages',
  'failing health checks',
  'serving stale data',
  'degraded after deploy',
  'certificate expired',
  'disk almost full',
] as const;

/**
 * Descriptions that break naive CSV writers, JSON handling or warehouse loaders. Every one of them
 * must survive an export byte for byte; they are drawn for about 4% of incidents.
 */
export const HARD_DESCRIPTIONS = [
  '',
  'Checkout fails, retries exhausted, queue backed up',
  'Customer quote: "nothing works", escalated',
  'First line\r\nsecond line after CRLF',
  'Only a line feed\nhere',
  'A bare carriage return\rhere',
  '🔥 Pager storm 🚨 — on-call overwhelmed',
  'תקלה בשרת התשלומים',
  'خطأ في قاعدة البيانات الرئيسية',
  '  leading and trailing spaces  ',
  'Tab\tseparated\tvalues',
  '=HYPERLINK("http://example.invalid","click")',
  'NULL',
  'Path C:\\temp\\new and a backslash\\',
  "Semicolon; pipe | and apostrophe ' mixed",
] as const;

/**
 * Every description the generator can produce: the hard ones first, then component × symptom.
 * Incidents store an index into this list, so a million incidents cost two bytes each, not a string.
 */
export const DESCRIPTIONS: readonly string[] = [
  ...HARD_DESCRIPTIONS,
  ...COMPONENTS.flatMap((component) => SYMPTOMS.map((symptom) => `${component} ${symptom}`)),
];
