/** `outbox catalogue diff`: not built yet (issue 3). */
export async function runCatalogueCommand(
  _action: string,
  _oldRef: string | undefined,
  _newRef: string | undefined,
  _options: Record<string, unknown>,
): Promise<number> {
  console.error('outbox catalogue: not implemented yet');
  return 2;
}
