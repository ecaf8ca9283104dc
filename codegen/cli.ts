/** `outbox codegen`: not built yet (issue 3). */
export async function runCodegenCommand(_options: Record<string, unknown>, _args: readonly string[]): Promise<number> {
  console.error('outbox codegen: not implemented yet');
  return 2;
}
