/**
 * `node dist/bench/summarize-profile.js FILE.cpuprofile [TOP]`: self time of a V8 CPU profile
 * (node --cpu-prof, or `npm run bench -- --cpu-prof DIR`) by function and by where the code lives
 * (a package under node_modules, a tilehouse folder, node internals), to see which part of the
 * pipeline costs the time.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function place(url: string): string {
  if (url === '') return '(native / V8)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return `pkg ${modules[1]}`;
  const own = /\/dist\/(src\/[^/]+(?:\/[^/]+)?)\//.exec(url) ?? /\/dist\/(src)\//.exec(url);
  if (own) return own[1]!;
  if (url.startsWith('node:')) return 'node internals';
  return url.replace(/^file:\/\/.*\/dist\//, '');
}

const [file, topText] = process.argv.slice(2);
if (file === undefined) throw new Error('usage: summarize-profile FILE.cpuprofile [TOP]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfMs = new Map<number, number>();
profile.samples.forEach((id, index) => selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000));
const total = [...selfMs.values()].reduce((a, b) => a + b, 0);

const byFunction = new Map<string, number>();
const byPlace = new Map<string, number>();
for (const [id, ms] of selfMs) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const where = place(url);
  const name = `${functionName || '(anonymous)'}  ${where}${url ? `:${lineNumber + 1}` : ''}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
  byPlace.set(where, (byPlace.get(where) ?? 0) + ms);
}
const top = Number(topText ?? 25);
const show = (title: string, map: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [name, ms] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${ms.toFixed(0).padStart(7)} ms ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${name}\n`);
  }
};
process.stdout.write(`total sampled ${total.toFixed(0)} ms\n`);
show('self time by place', byPlace);
show('self time by function', byFunction);
