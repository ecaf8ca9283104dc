import { AsyncLocalStorage } from 'node:async_hooks';
import type { JsonValue } from '../declare/types.js';
import type { Scope } from './scope.js';

/** One `suppressed()` block: the event names it covers, why, and whether to record. */
export interface Suppression {
  readonly names: ReadonlySet<string>;
  readonly reason: string;
  readonly record: boolean;
  /** The configs whose events this block's names were checked against (once each). */
  readonly checked: WeakSet<object>;
}

/**
 * What the async context carries: the scope, its data already spelled as headers, and the
 * enclosing `suppressed()` blocks, outermost first. One object, so `fire()` reads the
 * whole ambient state with ONE `getStore()` per call, and costs nothing more when no block
 * is set.
 */
export interface ScopeFrame {
  readonly scope: Scope;
  /** `scope.data` as event headers (`outbox-scope-<name>`), or null when there is none. */
  readonly headers: Readonly<Record<string, JsonValue>> | null;
  readonly suppressions: readonly Suppression[];
}

/** The one store of the process's attribution. Module state, but holds no value of its own. */
export const frames = new AsyncLocalStorage<ScopeFrame>();

/** The frame in effect right now, or undefined outside every block. */
export function currentFrame(): ScopeFrame | undefined {
  return frames.getStore();
}
