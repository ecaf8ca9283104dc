/**
 * Render a path into the config the way a reader would write it in TypeScript:
 * `receivers["billing.charge"].maxAttempts`, `events["shop.OrderPlaced"].version`.
 */
export function formatConfigPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (typeof part === 'string' && /^[A-Za-z_$][\w$]*$/.test(part))
      out += out ? `.${part}` : part;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out || '(root)';
}
