import { Document, isScalar, isSeq, visit } from 'yaml';

/**
 * Renders manifests as one multi-document YAML text, stable byte for byte (the committed files are
 * compared with a fresh rendering). Container args are written in flow style, `[run, --tile, x]`,
 * so each command reads on one line.
 */

export interface RenderOptions {
  /** Comment lines for the top of the file (without `#`). */
  header: string;
  /** Comments placed above keys of that name anywhere in the manifests (without `#`). */
  keyComments?: Record<string, string>;
  /** Keys whose string values are always double-quoted (a cron expression reads better quoted). */
  quotedKeys?: readonly string[];
}

export function renderYamlDocuments(manifests: readonly Record<string, unknown>[], options: RenderOptions): string {
  const header = `${options.header
    .split('\n')
    .map((line) => (line === '' ? '#' : `# ${line}`))
    .join('\n')}\n`;
  if (manifests.length === 0) return header;
  const documents = manifests.map((manifest) => {
    // Shared objects (one securityContext used twice) must not turn into YAML anchors.
    const document = new Document(manifest, { aliasDuplicateObjects: false });
    visit(document, {
      Pair(_, pair) {
        const key = isScalar(pair.key) ? pair.key.value : undefined;
        if (key === 'args' && isSeq(pair.value)) pair.value.flow = true;
        const comment = typeof key === 'string' ? options.keyComments?.[key] : undefined;
        if (comment !== undefined && isScalar(pair.key)) pair.key.commentBefore = comment;
        if (typeof key === 'string' && options.quotedKeys?.includes(key) && isScalar(pair.value)) pair.value.type = 'QUOTE_DOUBLE';
      },
    });
    return document.toString({ lineWidth: 0, flowCollectionPadding: false });
  });
  return `${header}${documents.map((text) => `---\n${text}`).join('')}`;
}
