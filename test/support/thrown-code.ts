/** The `code` of what `action` throws; undefined when it throws nothing (or an error without one). */
export function codeOf(action: () => unknown): string | undefined {
  try {
    action();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}
