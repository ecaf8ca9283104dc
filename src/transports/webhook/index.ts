export type { AllowsAddress, ResolvedAddress, WebhookLookup } from './guard.js';
export { isPublicUrl } from './guard.js';
export { isPublicAddress } from './public-address.js';
export { DEFAULT_SIGNATURE_HEADER, signBody } from './signature.js';
export type {
  WebhookCommonOptions,
  WebhookDelivery,
  WebhookOptions,
  WebhookResult,
  WebhookTarget,
  WebhookTargetOptions,
  WebhookUrlOptions,
} from './webhook.js';
export { WEBHOOK_RESULT_MAX_LENGTH, webhook } from './webhook.js';
