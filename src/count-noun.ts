/**
 * A count with its noun in the right number ("1 row", "2 rows", "0 rows"): every count a person
 * reads (summaries, messages, errors) goes through here, so none says "1 rows".
 */
export function countNoun(count: number, noun: string, many = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : many}`;
}
