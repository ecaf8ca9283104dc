import { frames } from './frame.js';
import { emptyScope, type Scope } from './scope.js';

/**
 * The scope in effect right now. `fire()` reads it when it is called, never later, so an
 * event's attribution is that of the code that fired it.
 *
 * A fresh, frozen, empty scope when no block is set — not a shared one, so nothing handed
 * to one caller or receiver can reach any other.
 */
export function currentScope(): Scope {
  return frames.getStore()?.scope ?? emptyScope();
}
