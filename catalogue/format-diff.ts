import type { CatalogueDiff } from './diff.js';

/**
 * Print a catalogue diff for a person: the breaking changes first (what fails CI), then
 * the compatible ones, each on one line. Ends in a newline.
 */
export function formatCatalogueDiffText(
  diff: CatalogueDiff,
  oldLabel: string,
  newLabel: string,
): string {
  const lines = [`catalogue diff ${oldLabel} → ${newLabel}`];
  if (diff.breaking.length === 0 && diff.compatible.length === 0) {
    lines.push('  no changes');
    return `${lines.join('\n')}\n`;
  }
  lines.push(`breaking changes (${diff.breaking.length}):`);
  for (const c of diff.breaking) lines.push(`  ✗ ${c.message}`);
  if (diff.breaking.length === 0) lines.push('  none');
  lines.push(`compatible changes (${diff.compatible.length}):`);
  for (const c of diff.compatible) lines.push(`  ✓ ${c.message}`);
  if (diff.compatible.length === 0) lines.push('  none');
  return `${lines.join('\n')}\n`;
}

/** The same diff for a pipeline: one JSON document ending in a newline. */
export function formatCatalogueDiffJson(
  diff: CatalogueDiff,
  oldLabel: string,
  newLabel: string,
): string {
  return `${JSON.stringify({ old: oldLabel, new: newLabel, breaking: diff.breaking, compatible: diff.compatible }, null, 2)}\n`;
}
