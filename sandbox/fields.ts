import { DESCRIPTIONS, DETECTION_METHODS, INCIDENT_TYPES, ROOT_CAUSES, STATUSES, TAG_LABELS } from './dataset-vocabulary.js';
import { NONE, type Dataset } from './dataset.js';
import type { Value, ValueType } from './values.js';

/**
 * A base row of a query: `incident * 4 + tagSlot`. Without a tag join the slot is always 0; with one,
 * slot k is the incident's k-th tag (an incident has at most 3). One number per row lets a filtered,
 * ordered result over a million rows live in a single Uint32Array.
 */
export type RowId = number;
export const rowIncident = (row: RowId): number => row >>> 2;
export const rowTagSlot = (row: RowId): number => row & 3;

export interface FieldDefinition {
  readonly type: ValueType;
  /** Whether reading the field makes the query join one row per tag label. */
  readonly joinsTags?: boolean;
  read(dataset: Dataset): (row: RowId) => Value;
}

// TAG_SLOT_LABEL[mask * 4 + slot] = the label of the slot-th set bit of mask, or null.
const TAG_SLOT_LABEL: (string | null)[] = [];
for (let mask = 0; mask < 256; mask++) {
  const labels = TAG_LABELS.filter((_, bit) => (mask & (1 << bit)) !== 0);
  for (let slot = 0; slot < 4; slot++) TAG_SLOT_LABEL[mask * 4 + slot] = labels[slot] ?? null;
}

function byteCoded(column: (d: Dataset) => Uint8Array, names: readonly string[]): FieldDefinition['read'] {
  return (d) => {
    const codes = column(d);
    return (row) => {
      const code = codes[rowIncident(row)]!;
      return code === NONE ? null : names[code]!;
    };
  };
}

/**
 * Every field a formula may reference as `[entity.field]`. The spec lists the fields it has seen;
 * the sandbox adds `incident.name` (the spec says it holds the number as text) and three more
 * postmortem custom keys so a breakdown has something to aggregate besides counts.
 */
export const FIELDS: Readonly<Record<string, FieldDefinition>> = {
  'incident.number': { type: 'number', read: () => (row) => rowIncident(row) + 1 },
  'incident.name': { type: 'text', read: () => (row) => String(rowIncident(row) + 1) },
  'incident.status': { type: 'text', read: byteCoded((d) => d.status, STATUSES) },
  'incident.created': { type: 'datetime', read: (d) => (row) => d.created[rowIncident(row)]! },
  'incident.type': { type: 'text', read: byteCoded((d) => d.type, INCIDENT_TYPES) },
  'incident.severity': { type: 'number', read: (d) => (row) => d.severity[rowIncident(row)]! },
  'incident.severity_label': { type: 'text', read: (d) => (row) => `SEV${d.severity[rowIncident(row)]!}` },
  'incident.description': { type: 'text', read: (d) => (row) => DESCRIPTIONS[d.description[rowIncident(row)]!]! },
  'postmortem_custom.custom_key': { type: 'text', read: byteCoded((d) => d.rootCause, ROOT_CAUSES) },
  'postmortem_custom.detection_method': { type: 'text', read: byteCoded((d) => d.detectionMethod, DETECTION_METHODS) },
  'postmortem_custom.customer_impact_minutes': {
    type: 'number',
    read: (d) => (row) => {
      const minutes = d.customerImpactMinutes[rowIncident(row)]!;
      return minutes < 0 ? null : minutes;
    },
  },
  'postmortem_custom.action_items': {
    type: 'number',
    read: (d) => (row) => {
      const count = d.actionItems[rowIncident(row)]!;
      return count < 0 ? null : count;
    },
  },
  'tag.label': {
    type: 'text',
    joinsTags: true,
    read: (d) => (row) => TAG_SLOT_LABEL[d.tags[rowIncident(row)]! * 4 + rowTagSlot(row)]!,
  },
};
