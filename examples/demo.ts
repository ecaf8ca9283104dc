/** `outbox demo`: not built yet. */
export async function runDemo(_options: { keep?: boolean }): Promise<number> {
  console.error('outbox demo: not implemented yet');
  return 2;
}
