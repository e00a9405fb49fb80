// The documents users read (README.md, CHANGELOG.md, docs/, k8s/README.md) describe the software
// as it is, not the tracker that shaped it: "before issue 29" means nothing to someone who
// installed a release. bench/README.md is the maintainers' measurement log, where a round's issue
// number is its name.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Lines that name an issue of the tracker ("issue 39", "Issue 28's"), as `file:line: text`. */
function trackerMentions(file: string, text: string): string[] {
  return text.split('\n').flatMap((line, index) => (/\bissues? #?\d+/i.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : []));
}

async function userDocuments(): Promise<string[]> {
  const docs = (await readdir(path.join(ROOT, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`);
  return ['README.md', 'CHANGELOG.md', 'k8s/README.md', ...docs.sort()];
}

describe("the users' documents", () => {
  it('name no issue of the tracker', async () => {
    const mentions: string[] = [];
    for (const file of await userDocuments()) mentions.push(...trackerMentions(file, await readFile(path.join(ROOT, file), 'utf8')));
    expect(mentions).toEqual([]);
  });

  it("are each listed in README.md's Reference table, which names no document that is not there", async () => {
    const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
    const reference = readme.slice(readme.indexOf('\n## Reference\n'), readme.indexOf('\n## ', readme.indexOf('\n## Reference\n') + 1));
    const listed = [...reference.matchAll(/^\| \[(docs\/[^\]]+\.md)\]\(\1\) \|/gm)].map((match) => match[1]);
    const docs = (await userDocuments()).filter((file) => file.startsWith('docs/'));
    expect([...listed].sort()).toEqual(docs);
  });

  it('are read for mentions the way a reader would see them', () => {
    expect(trackerMentions('x.md', 'a\nbefore issue 29 it was slower\nIssue #28’s targets\nissues 3 and 4')).toEqual([
      'x.md:2: before issue 29 it was slower',
      'x.md:3: Issue #28’s targets',
      'x.md:4: issues 3 and 4',
    ]);
    expect(trackerMentions('x.md', 'an issue with 2 rows\nissuer 3\nthe tissue 5')).toEqual([]);
  });
});
