export { decodeJson, encodeJson } from './json.js';
export { decodeEvent } from './decode-event.js';
