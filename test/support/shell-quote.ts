/** Single-quotes a string for a shell the way curl generators do: ' becomes '\''. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}
