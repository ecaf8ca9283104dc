// A module.register() resolve hook: append every URL the ESM loader resolves to a file
// (synchronously, so the list is complete when the import settles).
import { appendFileSync, writeFileSync } from 'node:fs';

let log;
export function initialize(data) {
  log = data.log;
  writeFileSync(log, '');
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  appendFileSync(log, `${resolved.url}\n`);
  return resolved;
}
