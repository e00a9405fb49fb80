import { cumulativeWeights, mulberry32, pickWeighted } from './prng.js';
import {
  DESCRIPTIONS,
  DETECTION_METHODS,
  HARD_DESCRIPTIONS,
  INCIDENT_TYPE_WEIGHTS,
  INCIDENT_TYPES,
  ROOT_CAUSES,
  SEVERITY_WEIGHTS,
  STATUSES,
  TAG_LABELS,
} from './dataset-vocabulary.js';

/** How far back incidents reach from the sandbox's "now". */
export const HISTORY_DAYS = 400;
const DAY_MS = 86_400_000;

/** Marks a missing value in the byte-coded columns. */
export const NONE = 255;

/**
 * The incidents, column by column. A million incidents as objects would cost hundreds of MB and
 * seconds of GC; as typed arrays they cost about 20 MB and generate in well under a second.
 * Row `i` is the incident with number `i + 1`.
 */
export interface Dataset {
  readonly size: number;
  /** The sandbox's "now" (epoch ms): every incident was created before it; `rw` windows end at it. */
  readonly now: number;
  /** Epoch ms, non-decreasing with the incident number (numbers are assigned in creation order). */
  readonly created: Float64Array;
  /** Index into STATUSES. */
  readonly status: Uint8Array;
  /** Index into INCIDENT_TYPES. */
  readonly type: Uint8Array;
  /** 0..3, 0 most severe. */
  readonly severity: Uint8Array;
  /** Index into DESCRIPTIONS. */
  readonly description: Uint16Array;
  /** Bit i set = the incident carries TAG_LABELS[i]. At most 3 bits are set. */
  readonly tags: Uint8Array;
  /** Index into ROOT_CAUSES, or NONE (no postmortem, or the field was left empty). */
  readonly rootCause: Uint8Array;
  /** Index into DETECTION_METHODS, or NONE. */
  readonly detectionMethod: Uint8Array;
  /** Minutes, or -1 for missing. */
  readonly customerImpactMinutes: Int32Array;
  /** Count, or -1 for missing. */
  readonly actionItems: Int8Array;
}

/** One incident as a plain object: for tests and for reading, never for bulk work. */
export interface Incident {
  number: number;
  status: string;
  created: number;
  type: string;
  severity: number;
  severityLabel: string;
  description: string;
  tags: string[];
  postmortem: {
    custom_key: string | null;
    detection_method: string | null;
    customer_impact_minutes: number | null;
    action_items: number | null;
  };
}

export interface DatasetOptions {
  size: number;
  seed: number;
  now: Date;
}

const TYPE_CUMULATIVE = cumulativeWeights(INCIDENT_TYPE_WEIGHTS);
const SEVERITY_CUMULATIVE = cumulativeWeights(SEVERITY_WEIGHTS);
const TAG_COUNT_CUMULATIVE = cumulativeWeights([0.25, 0.4, 0.25, 0.1]);
// Status depends on age: fresh incidents are still being worked on, old ones are mostly resolved.
const STATUS_FRESH = cumulativeWeights([0.45, 0.2, 0.2, 0.15]);
const STATUS_RECENT = cumulativeWeights([0.05, 0.05, 0.15, 0.75]);
const STATUS_OLD = cumulativeWeights([0.005, 0.005, 0.04, 0.95]);
const RESOLVED = STATUSES.indexOf('resolved');
const MITIGATED = STATUSES.indexOf('mitigated');
const SYMPTOM_DESCRIPTIONS = DESCRIPTIONS.length - HARD_DESCRIPTIONS.length;

export function generateDataset({ size, seed, now }: DatasetOptions): Dataset {
  if (!Number.isInteger(size) || size < 0 || size > 4_000_000) {
    throw new RangeError(`incidents must be an integer from 0 to 4,000,000 (got ${size})`);
  }
  const nowMs = now.getTime();
  if (!Number.isFinite(nowMs)) throw new RangeError('now must be a valid Date');

  const random = mulberry32(seed);
  const created = new Float64Array(size);
  const status = new Uint8Array(size);
  const type = new Uint8Array(size);
  const severity = new Uint8Array(size);
  const description = new Uint16Array(size);
  const tags = new Uint8Array(size);
  const rootCause = new Uint8Array(size).fill(NONE);
  const detectionMethod = new Uint8Array(size).fill(NONE);
  const customerImpactMinutes = new Int32Array(size).fill(-1);
  const actionItems = new Int8Array(size).fill(-1);

  const span = HISTORY_DAYS * DAY_MS;
  const start = nowMs - span;
  for (let i = 0; i < size; i++) {
    // One slot of the span per incident plus jitter inside it: increasing with the number, never at "now".
    created[i] = start + Math.floor(((i + random()) * span) / size);
    const age = nowMs - created[i]!;
    const statusWeights = age < 2 * DAY_MS ? STATUS_FRESH : age < 14 * DAY_MS ? STATUS_RECENT : STATUS_OLD;
    const s = pickWeighted(random, statusWeights);
    status[i] = s;
    type[i] = pickWeighted(random, TYPE_CUMULATIVE);
    severity[i] = pickWeighted(random, SEVERITY_CUMULATIVE);

    const d = random();
    description[i] =
      d < 0.04 ? Math.floor((d / 0.04) * HARD_DESCRIPTIONS.length) : HARD_DESCRIPTIONS.length + Math.floor(((d - 0.04) / 0.96) * SYMPTOM_DESCRIPTIONS);

    const tagCount = pickWeighted(random, TAG_COUNT_CUMULATIVE);
    let mask = 0;
    while (countBits(mask) < tagCount) mask |= 1 << Math.floor(random() * TAG_LABELS.length);
    tags[i] = mask;

    const postmortemChance = s === RESOLVED ? 0.85 : s === MITIGATED ? 0.3 : 0;
    if (random() < postmortemChance) {
      // Custom fields are optional in a postmortem: each is sometimes left empty (null in exports).
      if (random() >= 0.1) rootCause[i] = Math.floor(random() * ROOT_CAUSES.length);
      if (random() >= 0.15) detectionMethod[i] = Math.floor(random() * DETECTION_METHODS.length);
      if (random() >= 0.2) customerImpactMinutes[i] = Math.floor(random() ** 2 * 600);
      if (random() >= 0.1) actionItems[i] = Math.floor(random() * 10);
    }
  }
  // Every hard description appears at least once, spread over the history, so that even a small
  // sandbox exercises CSV quoting, CR/LF, emoji and RTL text in every test that exports descriptions.
  if (size >= HARD_DESCRIPTIONS.length) {
    for (let k = 0; k < HARD_DESCRIPTIONS.length; k++) description[Math.floor(((k + 0.5) * size) / HARD_DESCRIPTIONS.length)] = k;
  }
  return {
    size,
    now: nowMs,
    created,
    status,
    type,
    severity,
    description,
    tags,
    rootCause,
    detectionMethod,
    customerImpactMinutes,
    actionItems,
  };
}

export function countBits(mask: number): number {
  let n = 0;
  for (let m = mask; m !== 0; m &= m - 1) n++;
  return n;
}

/** The tag labels of a mask, in TAG_LABELS order (the order a tag join emits rows in). */
export function tagLabelsOf(mask: number): string[] {
  return TAG_LABELS.filter((_, bit) => (mask & (1 << bit)) !== 0);
}

export function incidentAt(dataset: Dataset, index: number): Incident {
  if (!Number.isInteger(index) || index < 0 || index >= dataset.size) {
    throw new RangeError(`no incident at index ${index} (size ${dataset.size})`);
  }
  const sev = dataset.severity[index]!;
  const root = dataset.rootCause[index]!;
  const detection = dataset.detectionMethod[index]!;
  const impact = dataset.customerImpactMinutes[index]!;
  const items = dataset.actionItems[index]!;
  return {
    number: index + 1,
    status: STATUSES[dataset.status[index]!]!,
    created: dataset.created[index]!,
    type: INCIDENT_TYPES[dataset.type[index]!]!,
    severity: sev,
    severityLabel: `SEV${sev}`,
    description: DESCRIPTIONS[dataset.description[index]!]!,
    tags: tagLabelsOf(dataset.tags[index]!),
    postmortem: {
      custom_key: root === NONE ? null : ROOT_CAUSES[root]!,
      detection_method: detection === NONE ? null : DETECTION_METHODS[detection]!,
      customer_impact_minutes: impact < 0 ? null : impact,
      action_items: items < 0 ? null : items,
    },
  };
}
