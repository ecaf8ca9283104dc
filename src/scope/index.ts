export { actorKeyOf } from './actor-key.js';
export { type Attribution, attributed } from './attributed.js';
export { type Cause, causedBy, withCause } from './caused-by.js';
export { currentScope } from './current-scope.js';
export { currentFrame, type ScopeFrame, type Suppression } from './frame.js';
export { propagateScope } from './propagate-scope.js';
export { emptyScope, SCOPE_HEADER_PREFIX, type Scope } from './scope.js';
export {
  checkSuppressedNames,
  type SuppressionVerdict,
  type SuppressOptions,
  suppressed,
  suppressionOf,
} from './suppressed.js';
export { MAX_TENANT, tenantProblem, withTenant } from './tenant.js';
