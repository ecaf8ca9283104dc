export { decodeEvent } from './decode-event.js';
export { decodeJson, type EncodedJson, encodeJson, encodeJsonValue } from './json.js';
